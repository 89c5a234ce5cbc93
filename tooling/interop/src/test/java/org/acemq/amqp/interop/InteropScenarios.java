package org.acemq.amqp.interop;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.interop.Ledger.Books;
import org.acemq.amqp.interop.Ledger.Gate;
import org.acemq.amqp.interop.Ledger.Kind;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The interoperability scenarios, the same on every broker: a consumer with the default settings of
 * {@link AmqpConsumer} and {@link Subscription} (a newcomer's consumer), an in-memory store that outlives consumer
 * restarts, and a broker set up as its operator would. Each scenario counts lost, processed-twice and handled-once
 * messages exactly and reports everything it saw when an assertion fails. Only the public API is used, so the
 * scenarios hold whatever the runtime's internals become.
 *
 * <p>The idle minute runs once for all brokers at the same time, in {@link IdleMinuteIT}.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
abstract class InteropScenarios {

    /** At most this many WARN lines from the consumer and the AMQP client while a consumer closes. */
    static final int CLOSE_WARNINGS_ALLOWED = 2;

    /** @return the broker under test */
    abstract InteropBroker broker();

    /** Nothing lost, nothing processed twice, {@code expected} messages handled exactly once, nothing left behind. */
    static void assertHandledExactlyOnce(ScenarioRun run, int expected) {
        Books books = run.ledger.books();
        assertThat(books.lost()).as("lost%s", run.report()).isEmpty();
        assertThat(books.processedTwice()).as("processed twice%s", run.report()).isEmpty();
        assertThat(books.handledOnce()).as("handled once%s", run.report()).isEqualTo(expected);
        assertThat(run.broker.messagesLeft(run.queue)).as("left on the broker%s", run.report()).isZero();
    }

    @Test
    void duplicatesAreAbsorbed() {
        try (ScenarioRun run = ScenarioRun.of(broker(), "duplicates")) {
            List<MessageSpec> originals = run.ledger.newMessages(80, Kind.NORMAL);
            List<MessageSpec> copies = Ledger.copies(originals.subList(0, 20));
            run.startConsumer();
            run.publish(originals);
            run.publish(copies);

            ScenarioRun.awaitQuietly(ScenarioRun.PROCESSING_WAIT, () -> run.ledger.allSucceeded()
                    && run.tally.count(Outcome.ACCEPTED, SettleReason.DUPLICATE) >= copies.size());
            ScenarioRun.awaitQuietly(ScenarioRun.SETTLE_WAIT, run::settled);

            assertHandledExactlyOnce(run, originals.size());
            assertThat(run.tally.count(Outcome.ACCEPTED, SettleReason.DUPLICATE))
                    .as("copies accepted as duplicates without running the handler%s", run.report())
                    .isEqualTo(copies.size());
            assertThat(run.tally.interruptions()).as("connection interruptions%s", run.report()).isZero();
        }
    }

    @Test
    void aMessageThatFailsOnceIsProcessedOnceAfterARetry() {
        try (ScenarioRun run = ScenarioRun.of(broker(), "fail-once")) {
            List<MessageSpec> messages = new ArrayList<>(run.ledger.newMessages(40, Kind.NORMAL));
            messages.addAll(run.ledger.newMessages(10, Kind.FAIL_ONCE));
            run.startConsumer();
            run.publish(messages);

            ScenarioRun.awaitQuietly(ScenarioRun.PROCESSING_WAIT, run.ledger::allSucceeded);
            ScenarioRun.awaitQuietly(ScenarioRun.SETTLE_WAIT, run::settled);

            assertHandledExactlyOnce(run, messages.size());
            for (String id : run.ledger.ids(Kind.FAIL_ONCE)) {
                assertThat(run.ledger.attempts(id)).as("handler runs of %s (fails once)%s", id, run.report())
                        .isEqualTo(2);
            }
            assertThat(run.tally.count(Outcome.REJECTED, SettleReason.POISON)).as("poison%s", run.report()).isZero();
            assertThat(run.tally.interruptions()).as("connection interruptions%s", run.report()).isZero();
        }
    }

    @Test
    void poisonIsDeadLetteredAfterMaxAttempts() {
        try (ScenarioRun run = ScenarioRun.of(broker(), "poison")) {
            List<MessageSpec> messages = new ArrayList<>(run.ledger.newMessages(20, Kind.NORMAL));
            messages.addAll(run.ledger.newMessages(3, Kind.POISON));
            int poison = run.ledger.ids(Kind.POISON).size();
            run.startConsumer();
            run.publish(messages);

            ScenarioRun.awaitQuietly(ScenarioRun.PROCESSING_WAIT, () -> run.ledger.allSucceeded()
                    && run.tally.count(Outcome.REJECTED, SettleReason.POISON) >= poison);
            ScenarioRun.awaitQuietly(ScenarioRun.SETTLE_WAIT, run::settled);

            assertHandledExactlyOnce(run, messages.size() - poison);
            for (String id : run.ledger.ids(Kind.POISON)) {
                assertThat(run.ledger.attempts(id)).as("handler runs of poison %s%s", id, run.report())
                        .isEqualTo(Subscription.DEFAULT_MAX_ATTEMPTS);
            }
            assertThat(run.tally.count(Outcome.REJECTED, SettleReason.POISON))
                    .as("rejected as poison%s", run.report()).isEqualTo(poison);
            Optional<List<String>> deadLetters = run.broker.takeDeadLetters(run.queue, poison);
            deadLetters.ifPresent(ids -> assertThat(ids).as("dead-lettered%s", run.report())
                    .containsExactlyInAnyOrderElementsOf(run.ledger.ids(Kind.POISON)));
            assertThat(run.tally.interruptions()).as("connection interruptions%s", run.report()).isZero();
        }
    }

    @Test
    void whatIsPublishedWhileTheConsumerIsDownIsConsumedAfterItsRestart() {
        try (ScenarioRun run = ScenarioRun.of(broker(), "consumer-restart")) {
            List<MessageSpec> before = run.ledger.newMessages(30, Kind.NORMAL);
            List<MessageSpec> whileDown = run.ledger.newMessages(30, Kind.NORMAL);
            AmqpConsumer first = run.startConsumer();
            run.publish(before);
            assertThat(ScenarioRun.awaitQuietly(ScenarioRun.PROCESSING_WAIT, () -> run.ledger.books().handledOnce()
                    >= before.size())).as("the first consumer handled the first batch%s", run.report()).isTrue();
            first.close();
            assertThat(first.health().state()).as("state after close()%s", run.report())
                    .isEqualTo(ConsumerHealth.State.STOPPED);

            run.publish(whileDown);
            run.startConsumer();
            ScenarioRun.awaitQuietly(ScenarioRun.PROCESSING_WAIT, run.ledger::allSucceeded);
            ScenarioRun.awaitQuietly(ScenarioRun.SETTLE_WAIT, run::settled);

            assertHandledExactlyOnce(run, before.size() + whileDown.size());
            assertThat(run.tally.interruptions()).as("connection interruptions%s", run.report()).isZero();
        }
    }

    @Test
    void aBrokerRestartLosesNothing() throws Exception {
        try (ScenarioRun run = ScenarioRun.of(broker(), "broker-restart")) {
            List<MessageSpec> before = run.ledger.newMessages(40, Kind.NORMAL);
            List<MessageSpec> after = run.ledger.newMessages(20, Kind.NORMAL);
            Gate gate = run.ledger.blockAt(15); // a handler is running when the broker goes down
            AmqpConsumer consumer = run.startConsumer();
            run.publish(before);
            assertThat(gate.awaitBlocked(ScenarioRun.PROCESSING_WAIT))
                    .as("the 15th handler call started%s", run.report()).isTrue();
            run.broker.restart();
            gate.open();
            run.publish(after);

            ScenarioRun.awaitQuietly(ScenarioRun.RESTART_WAIT, run.ledger::allSucceeded);
            ScenarioRun.awaitQuietly(ScenarioRun.SETTLE_WAIT, run::settled);

            assertHandledExactlyOnce(run, before.size() + after.size());
            assertThat(ScenarioRun.awaitQuietly(ScenarioRun.ATTACH_WAIT, () -> consumer.health().healthy()))
                    .as("healthy again after the restart%s", run.report()).isTrue();
        }
    }

    /**
     * A consumer holds no more deliveries than the credit it granted. A queue of a few thousand messages is
     * consumed with a small prefetch by a slowish handler while a sampler reads {@link ConsumerHealth}'s in-flight
     * count (taken and unsettled, plus queued in the AMQP client) every millisecond or so. It never exceeds
     * {@code concurrency + prefetch} (what the runtime grants) plus a tolerance of {@code concurrency}: health reads
     * what is in hand and what is queued one after the other, so a delivery that finished in between and whose slot
     * was already filled again can be seen twice. Nothing is lost or handled twice. RabbitMQ 3.x sends beyond the
     * link credit under load (rabbitmq-server#2597): the runtime releases that excess unread, so the bound holds there
     * too; a broker that keeps within its credit (Artemis) sees no such release at all.
     */
    @Test
    void aConsumerHoldsNoMoreDeliveriesThanItsCredit() throws Exception {
        int count = 3000;
        int concurrency = 4;
        int prefetch = 8;
        int bound = concurrency + prefetch + concurrency;
        try (ScenarioRun run = ScenarioRun.of(broker(), "credit-bound")) {
            List<MessageSpec> messages = run.ledger.newMessages(count, Kind.NORMAL);
            Subscription subscription = Subscription.builder(run.queue.address(), e -> {
                run.ledger.handle(e);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2)); // a slowish handler
            }).concurrency(concurrency).prefetch(prefetch).build();
            // The whole backlog is on the queue before consuming starts (RabbitMQ 3 overshoots with a backlog); a
            // first consumer makes stock Artemis create the queue as the consumer asks (ANYCAST), as in
            // consumer-restart.
            run.startConsumer(subscription).close();
            run.publish(messages);
            AtomicInteger maxInFlight = new AtomicInteger();
            AtomicInteger samples = new AtomicInteger();
            AmqpConsumer consumer = run.startConsumer(subscription);
            Thread sampler = new Thread(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    for (ConsumerHealth.SubscriptionHealth h : consumer.health().subscriptions()) {
                        maxInFlight.accumulateAndGet(h.inFlight(), Math::max);
                    }
                    samples.incrementAndGet();
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                }
            }, "credit-bound-sampler");
            sampler.setDaemon(true);
            sampler.start();
            try {
                ScenarioRun.awaitQuietly(Duration.ofMinutes(3), run.ledger::allSucceeded);
                ScenarioRun.awaitQuietly(ScenarioRun.SETTLE_WAIT, run::settled);
            } finally {
                sampler.interrupt();
                sampler.join(TimeUnit.SECONDS.toMillis(10));
            }

            int beyondCredit = (int) run.tally.count(Outcome.RELEASED, SettleReason.BEYOND_CREDIT);
            System.out.printf("credit bound on %s: %d messages, max in flight %d (bound %d) over %d samples, "
                    + "%d deliveries released beyond credit%n", run.broker.name(), count, maxInFlight.get(), bound,
                    samples.get(), beyondCredit);
            assertHandledExactlyOnce(run, count);
            assertThat(samples.get()).as("health samples taken%s", run.report()).isGreaterThan(100);
            assertThat(maxInFlight.get()).as("most deliveries held at once (bound %d)%s", bound, run.report())
                    .isLessThanOrEqualTo(bound);
            if (!run.broker.name().equals("rabbitmq")) {
                assertThat(beyondCredit).as("deliveries released beyond credit%s", run.report()).isZero();
            }
            assertThat(run.tally.interruptions()).as("connection interruptions%s", run.report()).isZero();
        }
    }

    @Test
    void closeIsCleanAndLosesNothing() throws Exception {
        try (ScenarioRun run = ScenarioRun.of(broker(), "close")) {
            List<MessageSpec> messages = run.ledger.newMessages(40, Kind.NORMAL);
            Gate gate = run.ledger.blockAt(10); // a handler is running when close() is called
            AmqpConsumer consumer = run.startConsumer();
            run.publish(messages);
            assertThat(gate.awaitBlocked(ScenarioRun.PROCESSING_WAIT))
                    .as("the 10th handler call started%s", run.report()).isTrue();

            LogWindow consumerLog = LogWindow.suiteLog(LogWindow.CONSUMER_PROBLEM);
            LogWindow brokerLog = run.broker.errorLog();
            CompletableFuture<Void> closing = CompletableFuture.runAsync(consumer::close);
            boolean stopping = ScenarioRun.awaitQuietly(ScenarioRun.SETTLE_WAIT,
                    () -> consumer.health().state() != ConsumerHealth.State.RUNNING);
            gate.open();
            closing.get(AmqpConsumer.DEFAULT_SHUTDOWN_TIMEOUT.plusSeconds(30).toSeconds(), TimeUnit.SECONDS);
            assertThat(stopping).as("close() began (state left RUNNING)%s", run.report()).isTrue();
            assertThat(consumer.health().state()).as("state after close()%s", run.report())
                    .isEqualTo(ConsumerHealth.State.STOPPED);
            assertThat(run.tally.interruptions()).as("connection interruptions (close() must not reconnect)%s",
                    run.report()).isZero();
            List<String> consumerProblems = consumerLog.problems();
            assertThat(consumerProblems.stream().filter(l -> l.contains(" ERROR "))).as(
                    "ERROR lines from the consumer and client during close()%s", run.report()).isEmpty();
            assertThat(consumerProblems).as("WARN lines from the consumer and client during close()%s", run.report())
                    .hasSizeLessThanOrEqualTo(CLOSE_WARNINGS_ALLOWED);
            assertThat(brokerLog.problems()).as("error lines in the broker's log (%s) during close()%s", brokerLog,
                    run.report()).isEmpty();

            // what the closed consumer did not handle is back on the broker, and a new consumer takes it
            int handled = run.ledger.books().handledOnce();
            assertThat(ScenarioRun.awaitQuietly(ScenarioRun.SETTLE_WAIT,
                    () -> run.broker.messagesLeft(run.queue) == messages.size() - handled))
                    .as("the broker holds exactly the %d messages not handled%s", messages.size() - handled,
                            run.report()).isTrue();
            run.startConsumer();
            ScenarioRun.awaitQuietly(ScenarioRun.PROCESSING_WAIT, run.ledger::allSucceeded);
            ScenarioRun.awaitQuietly(ScenarioRun.SETTLE_WAIT, run::settled);
            assertHandledExactlyOnce(run, messages.size());
        }
    }
}
