package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.acemq.amqp.consumer.RejectionHandler.Decision.ACCEPT;
import static org.acemq.amqp.consumer.RejectionHandler.Decision.REJECT;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.Fingerprint;
import org.acemq.amqp.consumer.MissingIdPolicy;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.ProjectFiles;
import org.acemq.amqp.consumer.RejectionHandler;
import org.acemq.amqp.consumer.RejectionConditions;
import org.acemq.amqp.consumer.RetryBackoff;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreFailurePolicy;
import org.acemq.amqp.consumer.Subscription;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The outcome policy, row by row: every row of the README's outcome table ("Delivery guarantees", the table whose
 * columns are case, outcome, reason, claim) is a row here, keyed by its case text, with the facts that make the case
 * and what the policy must decide. {@link #theReadmeTableAndThePolicyAgree()} reads the README and fails if a row is
 * missing on either side, or if the outcomes, conditions, reason or claim end it documents differ from what the policy
 * decides.
 */
class OutcomePolicyTest {

    private static final int MAX_ATTEMPTS = 3;

    /** One documented case: the facts (given a policy) and the verdicts the policy must reach. */
    record Row(String readmeCase, List<Function<OutcomePolicy, Verdict>> decisions, List<Verdict> expected) {
        @Override
        public String toString() {
            return readmeCase;
        }
    }

    private static OutcomePolicy policy(StoreFailurePolicy store) {
        return new OutcomePolicy(Subscription.builder("orders", e -> { })
                .maxAttempts(MAX_ATTEMPTS).permanentFailure(IllegalArgumentException.class)
                .inProgressDelay(Duration.ofMillis(700))
                .retryBackoff(RetryBackoff.of(Duration.ofMillis(100), Duration.ofSeconds(10), 2.0, 0.5))
                .build(), store);
    }

    private static OutcomePolicy rejecting() {
        return new OutcomePolicy(Subscription.builder("orders", e -> { })
                .fingerprint(Fingerprint.body().onConflict(Fingerprint.Action.REJECT)).build(),
                StoreFailurePolicy.FAIL_CLOSED);
    }

    private static DeliveryFacts fresh() {
        return DeliveryFacts.received(false, null, true, false);
    }

    private static DeliveryFacts claimed(int attempt) {
        return fresh().claimed(ClaimResult.CLAIMED, attempt);
    }

    private static OutcomePolicy atMostOnce() {
        return new OutcomePolicy(Subscription.builder("q", e -> { })
                .acknowledgementMode(AcknowledgementMode.AT_MOST_ONCE).build(), StoreFailurePolicy.FAIL_CLOSED);
    }

    /** A subscription with a rejection handler (and one that rejects conflicts, so every rejection can be asked). */
    private static final OutcomePolicy WITH_REJECTION_HANDLER = new OutcomePolicy(Subscription.builder("orders",
            e -> { }).maxAttempts(MAX_ATTEMPTS).permanentFailure(IllegalArgumentException.class)
            .fingerprint(Fingerprint.body().onConflict(Fingerprint.Action.REJECT))
            .rejectionHandler(r -> ACCEPT).build(), StoreFailurePolicy.FAIL_CLOSED);

    /** The verdict sent when the rejection handler answers {@code decision} (null: it threw) about these facts. */
    private static Verdict answered(DeliveryFacts facts, RejectionHandler.Decision decision) {
        Verdict decided = WITH_REJECTION_HANDLER.decide(facts);
        assertThat(WITH_REJECTION_HANDLER.consults(decided)).as("the handler is asked about %s", decided).isTrue();
        return WITH_REJECTION_HANDLER.afterRejectionHandler(decided, decision);
    }

    /** What happens to a delivery left at shutdown, in the order the runtime asks the policy. */
    private static Verdict leftAtShutdown(OutcomePolicy p, DeliveryFacts facts) {
        return p.handlesLeftAtShutdown() ? p.decide(facts) : Verdict.settle(Outcome.RELEASED, SettleReason.SHUTDOWN);
    }

    private static Row row(String readmeCase, Function<OutcomePolicy, Verdict> decision, Verdict expected) {
        return new Row(readmeCase, List.of(decision), List.of(expected));
    }

    private static Verdict rejected(SettleReason reason, String condition) {
        return Verdict.reject(reason, condition, null);
    }

    static Stream<Row> rows() {
        return Stream.of(
                row("handler returned and the store confirmed",
                        p -> p.decide(claimed(1).handled(null, true, 0.3)), Verdict.PROCESSED),
                row("the handler succeeded but the store fails to record the confirm",
                        p -> p.confirmNotRecorded(p.decide(claimed(2).handled(null, true, 0.3))), Verdict.PROCESSED),
                row("the handler succeeded but the store refuses the key when the confirm is recorded "
                                + "(`InvalidMessageIdException`)",
                        p -> p.confirmNotRecorded(p.decide(claimed(1).handled(null, true, 0.3))), Verdict.PROCESSED),
                row("store says `ALREADY_CONFIRMED` (a duplicate)",
                        p -> p.decide(fresh().claimed(ClaimResult.ALREADY_CONFIRMED, 1)), Verdict.DUPLICATE),
                row("store says `IN_PROGRESS` (another owner holds a live claim)",
                        p -> p.decide(fresh().claimed(ClaimResult.IN_PROGRESS, 1)),
                        Verdict.later(Outcome.RELEASED, SettleReason.IN_PROGRESS, Duration.ofMillis(700))),
                new Row("store holds the key with another fingerprint (a copy that differs; default `Fingerprint.body()`)",
                        List.of(
                                p -> p.decide(fresh().claimed(ClaimResult.ALREADY_CONFIRMED, 1, true)),
                                p -> p.decide(fresh().claimed(ClaimResult.IN_PROGRESS, 1, true))),
                        List.of(Verdict.settle(Outcome.ACCEPTED, SettleReason.CONFLICT),
                                Verdict.later(Outcome.RELEASED, SettleReason.CONFLICT, Duration.ofMillis(700)))),
                new Row("store holds the key with another fingerprint, and the subscription rejects conflicts", List.of(
                        p -> rejecting().decide(fresh().claimed(ClaimResult.ALREADY_CONFIRMED, 1, true)),
                        p -> rejecting().decide(fresh().claimed(ClaimResult.IN_PROGRESS, 1, true))),
                        List.of(rejected(SettleReason.CONFLICT, "acemq:fingerprint-conflict"),
                                rejected(SettleReason.CONFLICT, "acemq:fingerprint-conflict"))),
                new Row("handler threw `PermanentMessageException` or a type declared permanent", List.of(
                        p -> p.decide(claimed(1).handled(new PermanentMessageException("no"), true, 0.3)),
                        p -> p.decide(claimed(1).handled(new IllegalArgumentException("bad"), true, 0.3))),
                        List.of(Verdict.reject(SettleReason.PERMANENT, "acemq:permanent-failure", "no"),
                                Verdict.reject(SettleReason.PERMANENT, "acemq:permanent-failure",
                                        "IllegalArgumentException: bad"))),
                new Row("a Spring Boot `@AcemqListener` method's parameters cannot be resolved: its `@Valid` payload "
                        + "fails validation, or the body or a header cannot be converted (or a required header or the "
                        + "body is missing)", List.of(
                        p -> p.decide(claimed(1).handled(new PermanentMessageException(
                                RejectionConditions.VALIDATION_FAILED, "the Order payload of Orders.onOrder is not "
                                        + "valid: quantity: must be greater than 0", null), true, 0.3)),
                        p -> p.decide(claimed(1).handled(new PermanentMessageException(
                                RejectionConditions.DECODE_ERROR, "the body of s:1 cannot be converted", null), true,
                                0.3))),
                        List.of(Verdict.reject(SettleReason.PERMANENT, "acemq:validation-failed",
                                        "the Order payload of Orders.onOrder is not valid: quantity: must be greater "
                                                + "than 0"),
                                Verdict.reject(SettleReason.PERMANENT, "amqp:decode-error",
                                        "the body of s:1 cannot be converted"))),
                new Row("handler threw anything else, attempts left", List.of(
                        p -> p.decide(claimed(1).handled(new IllegalStateException(), true, 0.0)),
                        p -> p.decide(claimed(2).handled(new IllegalStateException(), false, 1.0))),
                        List.of(Verdict.later(Outcome.MODIFIED, SettleReason.FAILED, Duration.ofMillis(100)),
                                Verdict.later(Outcome.RELEASED, SettleReason.FAILED, Duration.ofMillis(100)))),
                new Row("an ordered subscription's handler threw anything else, attempts left (`orderBy`)", List.of(
                        p -> p.decide(DeliveryFacts.received(false, null, true, false, true)
                                .claimed(ClaimResult.CLAIMED, 1).handled(new IllegalStateException(), true, 0.0)),
                        p -> p.whenSent(p.decide(DeliveryFacts.received(false, null, true, false, true)
                                .claimed(ClaimResult.CLAIMED, 1).handled(new IllegalStateException(), true, 0.0)),
                                false)),
                        List.of(Verdict.retry(Outcome.MODIFIED, Duration.ofMillis(100)),
                                Verdict.retry(Outcome.MODIFIED, Duration.ofMillis(100)))),
                row("handler threw on the attempt that reaches `maxAttempts`",
                        p -> p.decide(claimed(MAX_ATTEMPTS).handled(new IllegalStateException("x"), true, 0)),
                        rejected(SettleReason.POISON, "acemq:max-attempts-exceeded")),
                row("the claim's attempt number is already above `maxAttempts` (the message crashed its consumers)",
                        p -> p.decide(claimed(MAX_ATTEMPTS + 1)),
                        rejected(SettleReason.POISON, "acemq:max-attempts-exceeded")),
                row("no message-id, and `MissingIdPolicy` finds no key (default `reject()`)",
                        p -> p.decide(DeliveryFacts.received(false, null, false, false)),
                        rejected(SettleReason.MISSING_ID, "acemq:missing-message-id")),
                row("the message cannot be decoded",
                        p -> p.decide(DeliveryFacts.received(false, "broken", false, false)),
                        rejected(SettleReason.UNDECODABLE, "amqp:decode-error")),
                row("the store refuses the message's key (`InvalidMessageIdException`: the store works, this key it "
                                + "cannot take)",
                        p -> p.decide(fresh().storeFailed("NUL", true)),
                        rejected(SettleReason.INVALID_ID, "acemq:invalid-message-id")),
                new Row("the subscription's `RejectionHandler` answers `ACCEPT` for a permanent failure or a poison "
                        + "message", List.of(
                        p -> answered(claimed(1).handled(new PermanentMessageException("no"), true, 0.3), ACCEPT),
                        p -> answered(claimed(MAX_ATTEMPTS).handled(new IllegalStateException("x"), true, 0), ACCEPT),
                        p -> answered(claimed(MAX_ATTEMPTS + 1), ACCEPT)),
                        List.of(Verdict.settle(Outcome.ACCEPTED, SettleReason.PERMANENT),
                                Verdict.settle(Outcome.ACCEPTED, SettleReason.POISON),
                                Verdict.settle(Outcome.ACCEPTED, SettleReason.POISON))),
                new Row("the subscription's `RejectionHandler` answers `ACCEPT` for a message rejected before any "
                        + "handler ran (undecodable, no key, a key the store refuses, a rejected conflict)", List.of(
                        p -> answered(DeliveryFacts.received(false, "broken", false, false), ACCEPT),
                        p -> answered(DeliveryFacts.received(false, null, false, false), ACCEPT),
                        p -> answered(fresh().storeFailed("NUL", true), ACCEPT),
                        p -> answered(fresh().claimed(ClaimResult.ALREADY_CONFIRMED, 1, true), ACCEPT)),
                        List.of(Verdict.settle(Outcome.ACCEPTED, SettleReason.UNDECODABLE),
                                Verdict.settle(Outcome.ACCEPTED, SettleReason.MISSING_ID),
                                Verdict.settle(Outcome.ACCEPTED, SettleReason.INVALID_ID),
                                Verdict.settle(Outcome.ACCEPTED, SettleReason.CONFLICT))),
                new Row("the subscription's `RejectionHandler` throws, answers null or answers `REJECT`", List.of(
                        p -> answered(claimed(1).handled(new PermanentMessageException("no"), true, 0.3), null),
                        p -> answered(claimed(MAX_ATTEMPTS).handled(new IllegalStateException("x"), true, 0), REJECT)),
                        List.of(Verdict.reject(SettleReason.PERMANENT, "acemq:permanent-failure", "no"),
                                rejected(SettleReason.POISON, "acemq:max-attempts-exceeded"))),
                new Row("the store cannot be reached (`FAIL_CLOSED`, default)", List.of(
                        p -> p.decide(fresh().storeFailed("down", false)),
                        p -> p.decide(DeliveryFacts.received(false, null, true, true))),
                        List.of(Verdict.settle(Outcome.RELEASED, SettleReason.STORE_UNAVAILABLE),
                                Verdict.settle(Outcome.RELEASED, SettleReason.STORE_UNAVAILABLE))),
                new Row("the store cannot be reached (`FAIL_OPEN`)", List.of(
                        p -> policy(StoreFailurePolicy.FAIL_OPEN).decide(fresh().storeFailed("d", false)),
                        p -> policy(StoreFailurePolicy.FAIL_OPEN).decide(
                                fresh().storeFailed("d", false).handled(null, true, 0))),
                        List.of(Verdict.RUN, Verdict.PROCESSED)),
                row("an unexpected failure inside the consumer while it processes the delivery (a store bug, a linkage "
                                + "error)",
                        OutcomePolicy::unexpectedFailure, Verdict.settle(Outcome.RELEASED, SettleReason.FAILED)),
                new Row("shutdown: received, or claimed and waiting for a handler thread, but not started", List.of(
                        p -> leftAtShutdown(p, DeliveryFacts.received(true, null, true, false)),
                        p -> p.decide(DeliveryFacts.received(true, null, true, false)),
                        p -> p.decide(claimed(1).waited(true, false)),
                        p -> p.decide(fresh().storeFailed("d", false).waited(true, false))),
                        List.of(Verdict.settle(Outcome.RELEASED, SettleReason.SHUTDOWN),
                                Verdict.settle(Outcome.RELEASED, SettleReason.SHUTDOWN),
                                Verdict.settle(Outcome.RELEASED, SettleReason.SHUTDOWN),
                                Verdict.settle(Outcome.RELEASED, SettleReason.SHUTDOWN))),
                new Row("`AT_MOST_ONCE` shutdown: received, or claimed and waiting for a handler thread, but not started",
                        List.of(
                                p -> leftAtShutdown(atMostOnce(), DeliveryFacts.received(true, null, true, false)),
                                p -> leftAtShutdown(atMostOnce(), claimed(1).waited(true, false)),
                                p -> atMostOnce().decide(claimed(1).waited(true, false).handled(null, true, 0))),
                        List.of(Verdict.CLAIM, Verdict.RUN, Verdict.PROCESSED)),
                new Row("a delivery held for the retry back-off or `inProgressDelay` when the consumer stops", List.of(
                        p -> p.whenSent(p.decide(claimed(1).handled(new IllegalStateException(), true, 0.0)), true),
                        p -> p.whenSent(p.decide(fresh().claimed(ClaimResult.IN_PROGRESS, 1)), true)),
                        List.of(Verdict.settle(Outcome.MODIFIED, SettleReason.FAILED),
                                Verdict.settle(Outcome.RELEASED, SettleReason.IN_PROGRESS))),
                row("the connection or link died after the delivery was claimed and before a handler thread started it",
                        p -> p.decide(claimed(1).waited(false, true)),
                        Verdict.settle(Outcome.RELEASED, SettleReason.SHUTDOWN)),
                row("the broker sent the delivery beyond the link credit granted (RabbitMQ 3.x under load: "
                                + "rabbitmq-server#2597)",
                        OutcomePolicy::beyondCredit, Verdict.settle(Outcome.RELEASED, SettleReason.BEYOND_CREDIT)),
                new Row("the connection or link died while the handler ran", List.of(), List.of()),
                new Row("`TRANSACTIONAL`: no transaction can be declared on the delivery's session", List.of(
                        p -> p.withoutTransaction(p.decide(claimed(1).handled(null, true, 0))),
                        p -> p.withoutTransaction(p.decide(claimed(1).handled(new IllegalStateException(), true, 0)))),
                        List.of(Verdict.settle(Outcome.RELEASED, SettleReason.PROCESSED),
                                Verdict.settle(Outcome.RELEASED, SettleReason.FAILED))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void eachDocumentedCaseIsDecidedAsDocumented(Row row) {
        OutcomePolicy policy = policy(StoreFailurePolicy.FAIL_CLOSED);
        for (int i = 0; i < row.decisions().size(); i++) {
            Verdict actual = row.decisions().get(i).apply(policy);
            Verdict expected = row.expected().get(i);
            assertThat(actual.action()).as("action").isEqualTo(expected.action());
            assertThat(actual.outcome()).as("outcome").isEqualTo(expected.outcome());
            assertThat(actual.reason()).as("reason").isEqualTo(expected.reason());
            assertThat(actual.condition()).as("condition").isEqualTo(expected.condition());
            if (expected.description() != null) {
                assertThat(actual.description()).as("description").isEqualTo(expected.description());
            }
            assertThat(actual.delay()).as("delay").isEqualTo(expected.delay());
        }
    }

    @Test
    void anOrderedRetryIsNotRetriedWhileTheConsumerStopsButGoesBackAsAnyFailure() {
        OutcomePolicy p = policy(StoreFailurePolicy.FAIL_CLOSED);
        Verdict retry = p.decide(DeliveryFacts.received(false, null, true, false, true)
                .claimed(ClaimResult.CLAIMED, 1).handled(new IllegalStateException(), true, 0.0));
        assertThat(retry.action()).isEqualTo(Verdict.Action.RETRY);
        assertThat(p.confirms(retry)).as("its claim is released before the retry").isFalse();

        Verdict stopping = p.whenSent(retry, true);
        assertThat(stopping.settles()).isTrue();
        assertThat(stopping.outcome()).isEqualTo(Outcome.MODIFIED);
        assertThat(stopping.reason()).isEqualTo(SettleReason.FAILED);
        assertThat(stopping.delay()).isZero();

        Verdict last = p.decide(DeliveryFacts.received(false, null, true, false, true)
                .claimed(ClaimResult.CLAIMED, MAX_ATTEMPTS).handled(new IllegalStateException("x"), true, 0.0));
        assertThat(last.reason()).as("out of attempts: rejected as for any subscription").isEqualTo(
                SettleReason.POISON);
    }

    @Test
    void theReadmeTableAndThePolicyAgree() throws IOException {
        Map<String, String[]> documented = readmeOutcomeTable();
        Map<String, Row> rows = new LinkedHashMap<>();
        rows().forEach(r -> rows.put(r.readmeCase(), r));
        assertThat(documented.keySet()).as("cases in the README's outcome table").isEqualTo(rows.keySet());
        OutcomePolicy policy = policy(StoreFailurePolicy.FAIL_CLOSED);
        for (Row row : rows.values()) {
            String[] cells = documented.get(row.readmeCase());
            Set<Outcome> outcomes = new LinkedHashSet<>();
            Set<String> conditions = new LinkedHashSet<>();
            Set<String> reasons = new LinkedHashSet<>();
            for (Function<OutcomePolicy, Verdict> decision : row.decisions()) {
                Verdict v = decision.apply(policy);
                if (v.settles()) {
                    outcomes.add(v.outcome());
                    reasons.add(v.reason().name().toLowerCase(Locale.ROOT));
                    if (v.condition() != null) {
                        conditions.add(v.condition());
                    }
                }
            }
            assertThat(outcomesIn(cells[0])).as("outcomes documented for '%s'", row.readmeCase())
                    .isEqualTo(outcomes);
            assertThat(conditionsIn(cells[0])).as("conditions documented for '%s'", row.readmeCase())
                    .isEqualTo(conditions);
            assertThat(reasonsIn(cells[1])).as("reason documented for '%s'", row.readmeCase()).isEqualTo(reasons);
            Set<String> claimEnds = reasonsIn(cells[2]);
            if (!claimEnds.isEmpty()) {
                Set<String> decided = new LinkedHashSet<>();
                for (Function<OutcomePolicy, Verdict> decision : row.decisions()) {
                    Verdict v = decision.apply(policy);
                    if (v.settles()) {
                        decided.add(policy.confirms(v) ? "confirmed" : "released");
                    }
                }
                assertThat(claimEnds).as("how the claim ends, documented for '%s'", row.readmeCase())
                        .isEqualTo(decided);
            }
        }
    }

    @Test
    void theRejectionHandlerIsAskedAboutRejectionsOnlyAndOnlyWhenTheSubscriptionHasOne() {
        OutcomePolicy without = policy(StoreFailurePolicy.FAIL_CLOSED);
        Verdict poison = without.decide(claimed(MAX_ATTEMPTS + 1));
        assertThat(poison.outcome()).isEqualTo(Outcome.REJECTED);
        assertThat(without.consults(poison)).as("no handler: the rejection proceeds").isFalse();
        assertThat(without.confirms(poison)).isFalse();
        OutcomePolicy with = WITH_REJECTION_HANDLER;
        assertThat(with.consults(with.decide(claimed(1).handled(new IllegalStateException(), true, 0))))
                .as("a transient failure is not a rejection").isFalse();
        assertThat(with.consults(with.decide(fresh().claimed(ClaimResult.ALREADY_CONFIRMED, 1)))).isFalse();
        assertThat(with.consults(Verdict.RUN)).isFalse();
        assertThatThrownBy(() -> with.afterRejectionHandler(Verdict.PROCESSED, ACCEPT))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rejections only");
        assertThat(with.confirms(answered(claimed(MAX_ATTEMPTS + 1), ACCEPT))).as("taken over: done").isTrue();
        assertThat(with.confirms(answered(claimed(MAX_ATTEMPTS + 1), REJECT))).isFalse();
    }

    @Test
    void retryDelaysGrowByTheMultiplierUpToTheMaximumAndJitterOnlyShortensThem() {
        OutcomePolicy p = policy(StoreFailurePolicy.FAIL_CLOSED);
        assertThat(p.retryDelay(1, 0.0)).isEqualTo(Duration.ofMillis(100));
        assertThat(p.retryDelay(2, 0.0)).isEqualTo(Duration.ofMillis(200));
        assertThat(p.retryDelay(4, 0.0)).isEqualTo(Duration.ofMillis(800));
        assertThat(p.retryDelay(30, 0.0)).isEqualTo(Duration.ofSeconds(10));
        assertThat(p.retryDelay(2, 1.0)).as("jitter 0.5 takes off at most half").isEqualTo(Duration.ofMillis(100));
        assertThat(p.retryDelay(2, 0.5)).isEqualTo(Duration.ofMillis(150));
        OutcomePolicy none = new OutcomePolicy(Subscription.builder("q", e -> { }).retryBackoff(RetryBackoff.none())
                .build(), StoreFailurePolicy.FAIL_CLOSED);
        assertThat(none.decide(claimed(1).handled(new IllegalStateException(), true, 0.7)).delay()).isZero();
    }

    @Test
    void anExplicitTransientOutcomeWinsOverWhatTheBrokerImplements() {
        OutcomePolicy released = new OutcomePolicy(Subscription.builder("q", e -> { })
                .transientFailureOutcome(Outcome.RELEASED).build(), StoreFailurePolicy.FAIL_CLOSED);
        assertThat(released.transientOutcome(true)).isEqualTo(Outcome.RELEASED);
        OutcomePolicy modified = new OutcomePolicy(Subscription.builder("q", e -> { })
                .transientFailureOutcome(Outcome.MODIFIED).build(), StoreFailurePolicy.FAIL_CLOSED);
        assertThat(modified.transientOutcome(false)).isEqualTo(Outcome.MODIFIED);
        assertThat(policy(StoreFailurePolicy.FAIL_CLOSED).transientOutcome(false)).isEqualTo(Outcome.RELEASED);
    }

    @Test
    void atMostOnceReportsEverythingButBadInputAcceptedAndNeverHoldsOrRejectsAsPoison() {
        OutcomePolicy p = new OutcomePolicy(Subscription.builder("q", e -> { }).maxAttempts(1)
                .acknowledgementMode(AcknowledgementMode.AT_MOST_ONCE).build(), StoreFailurePolicy.FAIL_CLOSED);
        assertThat(p.decide(DeliveryFacts.received(true, null, true, false))).as("stopping: handled, not released")
                .isEqualTo(Verdict.CLAIM);
        assertThat(p.decide(DeliveryFacts.received(false, null, true, true))).as("store known down: still tried")
                .isEqualTo(Verdict.CLAIM);
        assertThat(p.decide(claimed(5))).as("no attempt limit").isEqualTo(Verdict.RUN);
        assertThat(p.decide(claimed(5).handled(new IllegalStateException(), true, 0)))
                .isEqualTo(Verdict.settle(Outcome.ACCEPTED, SettleReason.FAILED));
        assertThat(p.decide(fresh().claimed(ClaimResult.IN_PROGRESS, 1)))
                .isEqualTo(Verdict.settle(Outcome.ACCEPTED, SettleReason.IN_PROGRESS));
        assertThat(p.decide(fresh().storeFailed("x", false)))
                .isEqualTo(Verdict.settle(Outcome.ACCEPTED, SettleReason.STORE_UNAVAILABLE));
        assertThat(p.decide(DeliveryFacts.received(false, "bad", false, false)).outcome()).isEqualTo(Outcome.REJECTED);
    }

    @Test
    void aClaimedDeliveryThatWaitedRunsUnlessTheConsumerClosedOrItsLinkDied() {
        OutcomePolicy p = policy(StoreFailurePolicy.FAIL_CLOSED);
        assertThat(p.decide(claimed(1).waited(false, false))).as("nothing changed").isEqualTo(Verdict.RUN);
        assertThat(p.decide(claimed(MAX_ATTEMPTS + 1).waited(true, false)))
                .as("closing wins over poison: it goes back uncounted")
                .isEqualTo(Verdict.settle(Outcome.RELEASED, SettleReason.SHUTDOWN));
        OutcomePolicy atMostOnce = new OutcomePolicy(Subscription.builder("q", e -> { })
                .acknowledgementMode(AcknowledgementMode.AT_MOST_ONCE).build(), StoreFailurePolicy.FAIL_CLOSED);
        assertThat(atMostOnce.decide(claimed(1).waited(true, true)))
                .as("at-most-once: the broker settled it already, so it is handled").isEqualTo(Verdict.RUN);
    }

    @Test
    void onlyAProcessedVerdictConfirmsItsClaimAndOnlyItCanLoseAConfirm() {
        OutcomePolicy p = policy(StoreFailurePolicy.FAIL_CLOSED);
        assertThat(p.confirms(Verdict.PROCESSED)).isTrue();
        assertThat(p.confirms(Verdict.DUPLICATE)).as("accepted, but not this consumer's work").isFalse();
        assertThat(p.confirms(Verdict.settle(Outcome.ACCEPTED, SettleReason.FAILED))).isFalse();
        assertThat(p.confirms(Verdict.RUN)).as("not a settling verdict").isFalse();
        assertThat(p.confirms(p.decide(claimed(1).handled(new IllegalStateException(), true, 0)))).isFalse();
        assertThat(p.confirmNotRecorded(Verdict.PROCESSED)).isEqualTo(Verdict.PROCESSED);
        assertThatThrownBy(() -> p.confirmNotRecorded(Verdict.DUPLICATE))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aHoldIsKeptWhileRunningAndDroppedOnlyWhileStopping() {
        OutcomePolicy p = policy(StoreFailurePolicy.FAIL_CLOSED);
        Verdict held = p.decide(fresh().claimed(ClaimResult.IN_PROGRESS, 1));
        assertThat(p.whenSent(held, false)).isSameAs(held);
        assertThat(p.whenSent(held, true)).isEqualTo(Verdict.settle(Outcome.RELEASED, SettleReason.IN_PROGRESS));
        assertThat(p.whenSent(Verdict.PROCESSED, true)).isSameAs(Verdict.PROCESSED);
    }

    @Test
    void onlyAtMostOnceHandlesWhatIsLeftAtShutdown() {
        assertThat(atMostOnce().handlesLeftAtShutdown()).isTrue();
        assertThat(policy(StoreFailurePolicy.FAIL_CLOSED).handlesLeftAtShutdown()).isFalse();
        assertThat(new OutcomePolicy(Subscription.builder("q", e -> { })
                .acknowledgementMode(AcknowledgementMode.TRANSACTIONAL).build(), StoreFailurePolicy.FAIL_CLOSED)
                .handlesLeftAtShutdown()).isFalse();
    }

    @Test
    void withoutATransactionOnlyAReleaseGoesOutAndItKeepsTheReasonAndNoCondition() {
        OutcomePolicy p = policy(StoreFailurePolicy.FAIL_CLOSED);
        Verdict poison = p.decide(claimed(MAX_ATTEMPTS).handled(new IllegalStateException("x"), true, 0));
        assertThat(p.withoutTransaction(poison)).isEqualTo(Verdict.settle(Outcome.RELEASED, SettleReason.POISON));
        assertThat(p.withoutTransaction(Verdict.DUPLICATE))
                .isEqualTo(Verdict.settle(Outcome.RELEASED, SettleReason.DUPLICATE));
    }

    @Test
    void theStoresAnswerIsOneOfItsClaimResultsOrAFailureThatSaysWhetherTheKeyWasRefused() {
        assertThatThrownBy(() -> fresh().claimed(null, 0))
                .isInstanceOf(IllegalArgumentException.class);
        DeliveryFacts down = fresh().storeFailed("timeout", false);
        assertThat(down.claim()).isNull();
        assertThat(down.holdsClaim()).isFalse();
        assertThat(down.keyRefused()).isFalse();
        assertThat(fresh().storeFailed("NUL", true).keyRefused()).isTrue();
        assertThat(claimed(1).holdsClaim()).isTrue();
        assertThat(fresh().claimed(ClaimResult.IN_PROGRESS, 1).holdsClaim()).isFalse();
        assertThatThrownBy(() -> policy(StoreFailurePolicy.FAIL_CLOSED)
                .decide(new DeliveryFacts(DeliveryFacts.Stage.CLAIMED, false, false, null, true, false, null, null,
                        false, 0, null, true, 0, false, false))).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void missingIdDescriptionNamesThePropertyTheKeyWasLookedFor() {
        OutcomePolicy p = new OutcomePolicy(Subscription.builder("q", e -> { })
                .missingIdPolicy(MissingIdPolicy.applicationProperty("orderId")).build(),
                StoreFailurePolicy.FAIL_CLOSED);
        assertThat(p.decide(DeliveryFacts.received(false, null, false, false)).description())
                .isEqualTo("message has no message-id and no 'orderId' application property");
    }

    @Test
    void aPermanentFailureKeepsItsOwnConditionAndDescription() {
        assertThat(policy(StoreFailurePolicy.FAIL_CLOSED).decide(
                claimed(1).handled(new PermanentMessageException("app:bad-order", "no such customer", null), true, 0)))
                .isEqualTo(Verdict.reject(SettleReason.PERMANENT, "app:bad-order", "no such customer"));
    }

    @Test
    void descriptionsAreBoundedForTheBroker() {
        Verdict v = Verdict.reject(SettleReason.PERMANENT, "c:d", "x".repeat(2000));
        assertThat(v.description()).hasSize(Verdict.MAX_DESCRIPTION).endsWith("...");
    }

    // ------------------------------------------------------------------ README

    private static final Pattern TICKED = Pattern.compile("`([^`]+)`");

    private static Set<Outcome> outcomesIn(String cell) {
        Set<Outcome> found = new LinkedHashSet<>();
        Matcher m = TICKED.matcher(cell);
        while (m.find()) {
            String token = m.group(1).toLowerCase(Locale.ROOT);
            for (Outcome o : Outcome.values()) {
                String name = o.name().toLowerCase(Locale.ROOT);
                if (token.equals(name) || token.startsWith(name + "(")) {
                    found.add(o);
                }
            }
        }
        return found;
    }

    private static Set<String> conditionsIn(String cell) {
        Set<String> found = new LinkedHashSet<>();
        Matcher m = TICKED.matcher(cell);
        while (m.find()) {
            if (m.group(1).matches("[a-z]+:[a-z-]+")) {
                found.add(m.group(1));
            }
        }
        return found;
    }

    private static Set<String> reasonsIn(String cell) {
        Set<String> found = new LinkedHashSet<>();
        Matcher m = TICKED.matcher(cell);
        while (m.find()) {
            found.add(m.group(1));
        }
        return found;
    }

    /**
     * @return case → {outcome cell, reason cell, claim cell} of the README table headed
     *     "| case | outcome | reason | claim |"
     */
    static Map<String, String[]> readmeOutcomeTable() throws IOException {
        List<String> lines = ProjectFiles.readme();
        Map<String, String[]> table = new LinkedHashMap<>();
        boolean in = false;
        for (String line : lines) {
            String t = line.trim();
            if (t.replace(" ", "").equals("|case|outcome|reason|claim|")) {
                in = true;
                continue;
            }
            if (!in) {
                continue;
            }
            if (!t.startsWith("|")) {
                break;
            }
            if (t.startsWith("|---")) {
                continue;
            }
            List<String> cells = new ArrayList<>(List.of(t.substring(1, t.length() - 1).split("\\|", -1)));
            assertThat(cells).as("row '%s' has four cells", t).hasSize(4);
            String previous = table.put(cells.get(0).trim(),
                    new String[] {cells.get(1).trim(), cells.get(2).trim(), cells.get(3).trim()}) == null ? null : "twice";
            assertThat(previous).as("case listed twice: %s", cells.get(0)).isNull();
        }
        assertThat(table).as("README.md has an outcome table headed '| case | outcome | reason | claim |'")
                .isNotEmpty();
        return table;
    }
}
