package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.RetryBackoff;
import org.acemq.amqp.consumer.Subscription;
import org.junit.jupiter.api.Test;

/**
 * The run stage, on the test's thread: decides again with what changed while the delivery waited, runs the handler
 * once, and hands the verdict to the end stage (claim confirmed before {@code accepted}, released before anything
 * else).
 */
class PipelineRunTest {

    private final List<String> handled = new CopyOnWriteArrayList<>();
    private final List<Integer> attempts = new CopyOnWriteArrayList<>();
    private Consumer<Envelope> behaviour = e -> { };

    private Stages stages(Subscription.Builder b) {
        return new Stages(b.build());
    }

    private Subscription.Builder orders() {
        return Subscription.builder(Deliveries.ADDRESS, e -> {
            handled.add(Stages.id(e.id()));
            attempts.add(e.attempt());
            behaviour.accept(e);
        });
    }

    private static Delivery admitted(Stages s, String id) {
        List<Delivery> run = s.admitted(id);
        assertThat(run).hasSize(1);
        return run.get(0);
    }

    @Test
    void theHandlerRunsOnceAndTheClaimIsConfirmedBeforeTheDeliveryIsAccepted() {
        Stages s = stages(orders());
        Delivery d = admitted(s, "a");

        s.pipeline.run(d);

        assertThat(handled).containsExactly("a");
        assertThat(attempts).containsExactly(1);
        assertThat(s.log).containsExactly("acquire [orders|s:a]", "confirm [orders|s:a]",
                "settle [orders|s:a] ACCEPTED/PROCESSED");
        assertThat(s.settlement.sent.get(0).confirmedInStore()).as("confirmed before the disposition").isTrue();
        assertThat(d.state()).isEqualTo(Delivery.State.SETTLED);
        assertThat(d.completed).isTrue();
        assertThat(d.sent).isTrue();
        assertThat(d.claim).as("the claim has ended").isNull();
        assertThat(s.memory.acquire(s.key("a")).result()).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    @Test
    void aTransientFailureReleasesTheClaimAndHoldsTheDeliveryForItsBackOff() {
        Stages s = stages(orders()); // default back-off: 100 ms first; the test's jitter draw is 0
        behaviour = e -> {
            throw new IllegalStateException("test: downstream timed out");
        };
        Delivery d = admitted(s, "a");

        s.pipeline.run(d);

        assertThat(handled).containsExactly("a");
        assertThat(s.log).containsExactly("acquire [orders|s:a]", "release [orders|s:a]");
        assertThat(d.state()).isEqualTo(Delivery.State.HELD);
        assertThat(d.completed).as("handed on: held counts as sent").isTrue();
        s.advance(Duration.ofMillis(99));
        assertThat(s.settlement.sent).isEmpty();
        s.advance(Duration.ofMillis(1));
        assertThat(s.settlement.summary()).as("modified where the broker has it (unknown broker: assumed)")
                .containsExactly("a MODIFIED/FAILED");
        assertThat(s.settlement.sent.get(0).time()).isEqualTo(Duration.ofMillis(100).toNanos());
        assertThat(d.state()).isEqualTo(Delivery.State.SETTLED);
        assertThat(s.memory.acquire(s.key("a")).attempt()).as("released: the next copy is attempt 2")
                .isEqualTo(2);
    }

    @Test
    void withoutABackOffAndWithReleasedChosenAFailedDeliveryGoesBackAtOnce() {
        Stages s = stages(orders().retryBackoff(RetryBackoff.none()).transientFailureOutcome(Outcome.RELEASED));
        behaviour = e -> {
            throw new IllegalStateException("test: downstream timed out");
        };
        Delivery d = admitted(s, "a");

        s.pipeline.run(d);

        assertThat(s.settlement.summary()).containsExactly("a RELEASED/FAILED");
        assertThat(s.settlement.sent.get(0).state()).as("never held").isEqualTo(Delivery.State.SETTLED);
        assertThat(s.log).containsSubsequence("release [orders|s:a]", "settle [orders|s:a] RELEASED/FAILED");
    }

    @Test
    void theLastAttemptThatFailsIsRejectedAsPoison() {
        Stages s = stages(orders().maxAttempts(1));
        behaviour = e -> {
            throw new IllegalStateException("test: fails every time");
        };

        s.pipeline.run(admitted(s, "a"));

        assertThat(s.settlement.summary()).containsExactly("a REJECTED/POISON");
        assertThat(s.log).containsSubsequence("release [orders|s:a]", "settle [orders|s:a] REJECTED/POISON");
    }

    @Test
    void aPermanentFailureIsRejectedAtOnceAndItsClaimReleased() {
        Stages s = stages(orders());
        behaviour = e -> {
            throw new PermanentMessageException("acme:bad-order", "test: order has no lines", null);
        };

        s.pipeline.run(admitted(s, "a"));

        assertThat(handled).containsExactly("a");
        assertThat(s.settlement.summary()).containsExactly("a REJECTED/PERMANENT");
        assertThat(s.log).containsExactly("acquire [orders|s:a]", "release [orders|s:a]",
                "settle [orders|s:a] REJECTED/PERMANENT");
        assertThat(s.memory.isConfirmed(s.key("a"))).isFalse();
    }

    @Test
    void stoppingBeforeTheHandlerStartsReleasesTheClaimWithoutRunningIt() {
        Stages s = stages(orders());
        Delivery d = admitted(s, "a");
        s.stopping.set(true);

        s.pipeline.run(d);

        assertThat(handled).isEmpty();
        assertThat(s.settlement.summary()).containsExactly("a RELEASED/SHUTDOWN");
        assertThat(s.log).containsExactly("acquire [orders|s:a]", "release [orders|s:a]",
                "settle [orders|s:a] RELEASED/SHUTDOWN");
        assertThat(d.state()).isEqualTo(Delivery.State.SETTLED);
    }

    @Test
    void aLinkThatDiedWhileTheDeliveryWaitedReleasesItsClaimWithoutRunningIt() {
        Stages s = stages(orders());
        Delivery d = admitted(s, "a");
        s.deliveries.link.invalidate(ReceiverLink.End.DETACHED);

        s.pipeline.run(d);

        assertThat(handled).isEmpty();
        assertThat(s.log).containsSubsequence("release [orders|s:a]", "settle [orders|s:a] RELEASED/SHUTDOWN");
    }

    @Test
    void anAtMostOnceFailureIsAcceptedAndLost() {
        Stages s = stages(orders().acknowledgementMode(AcknowledgementMode.AT_MOST_ONCE));
        behaviour = e -> {
            throw new IllegalStateException("test: fails");
        };

        s.pipeline.run(admitted(s, "a"));

        assertThat(handled).containsExactly("a");
        assertThat(s.settlement.summary()).containsExactly("a ACCEPTED/FAILED");
    }

    @Test
    void aVerdictTheEndStageRefusesIsSettledAsAnUnexpectedFailureNotLeftHanging() {
        Delivery[] self = new Delivery[1];
        behaviour = e -> self[0].moveTo(Delivery.State.ENDING); // a bug elsewhere moved the delivery on
        Stages s = stages(orders());
        Delivery d = admitted(s, "a");
        self[0] = d;

        s.pipeline.run(d);

        assertThat(s.settlement.summary()).containsExactly("a RELEASED/FAILED");
        assertThat(s.log).containsExactly("acquire [orders|s:a]", "release [orders|s:a]",
                "settle [orders|s:a] RELEASED/FAILED");
        assertThat(d.state()).isEqualTo(Delivery.State.SETTLED);
        assertThat(d.completed).isTrue();
    }

    @Test
    void aDeliveryThatWasNotAdmittedIsSettledAsAnUnexpectedFailureAndItsClaimReleased() {
        Stages s = stages(orders());
        Delivery d = s.read("a");
        s.claims.claim(List.of(d)); // claimed, but never admitted: a bug upstream

        s.pipeline.run(d);

        assertThat(handled).isEmpty();
        assertThat(s.settlement.summary()).containsExactly("a RELEASED/FAILED");
        assertThat(s.log).containsExactly("acquire [orders|s:a]", "release [orders|s:a]",
                "settle [orders|s:a] RELEASED/FAILED");
        assertThat(d.claim).isNull();
        assertThat(d.completed).isTrue();
    }

    @Test
    void theHandlersRunTimeIsRecordedOnTheTicker() {
        Stages s = stages(orders());
        behaviour = e -> s.advance(Duration.ofMillis(20));
        long before = s.times.averageNanos();

        s.pipeline.run(admitted(s, "a"));

        long took = Duration.ofMillis(20).toNanos();
        assertThat(s.times.averageNanos()).isEqualTo(before + ((took - before) >> 3));
    }
}
