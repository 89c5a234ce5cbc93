package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutboxStore;
import org.acemq.amqp.consumer.ConsumerHealth;
import org.acemq.amqp.consumer.SendPath;
import org.acemq.amqp.consumer.StandardErrorTee;
import org.acemq.amqp.consumer.testing.ManualTime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The outbox sweep's schedule and failure handling, on {@link ManualTime} with an outbox in memory ({@link FakeOutbox},
 * with the JDBC store's holds) and an outlet that accepts, refuses or fails per address: when it runs, what it takes,
 * what it marks, what it records and logs when the broker refuses, and what it does while the broker or the store is
 * down.
 */
class OutboxSweepTest {

    private static final Duration INTERVAL = Duration.ofSeconds(10);
    private static final Duration MIN_AGE = Duration.ofSeconds(30);
    private static final Duration MAX_AGE = Duration.ofMinutes(5);
    private static final Duration HOLD = Duration.ofSeconds(30);
    private static final String REFUSED = "nowhere";
    private static final String CONDITION = "amqp:not-found \"AMQ229209: Address nowhere does not exist\"";

    private final ManualTime time = new ManualTime();
    private final Clock clock = new Clock() {
        private final Instant base = Instant.parse("2025-01-01T00:00:00Z");

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return base.plusNanos(time.read());
        }
    };
    private final FakeOutbox outbox = new FakeOutbox(clock, HOLD);
    private final FakeOutlet outlet = new FakeOutlet();
    private final AtomicBoolean connected = new AtomicBoolean(true);
    private final OutboxState state = new OutboxState(time, clock, MAX_AGE);

    /** Sends as told: accepts, refuses the address {@link #REFUSED}, fails (not taken) the addresses in failing. */
    static final class FakeOutlet implements Outlet {
        final List<String> sent = new CopyOnWriteArrayList<>();
        final List<SendPath> paths = new CopyOnWriteArrayList<>();
        final Set<String> failing = ConcurrentHashMap.newKeySet();
        volatile Runnable during = () -> { };

        @Override
        public List<SendFailedException> send(List<Outbound> messages, SendPath path) {
            during.run();
            SendFailedException[] results = new SendFailedException[messages.size()];
            for (int i = 0; i < messages.size(); i++) {
                Outbound o = messages.get(i);
                paths.add(path);
                if (o.address().equals(REFUSED)) {
                    results[i] = new SendFailedException("message " + o.messageId() + " to '" + o.address()
                            + "' could not be sent: the broker refused a sender for its address: "
                            + "ClientLinkRemotelyClosedException: " + CONDITION, true, null);
                } else if (failing.contains(o.address())) {
                    results[i] = new SendFailedException("message " + o.messageId() + " to '" + o.address()
                            + "' was released by the broker", false, null);
                } else {
                    sent.add(o.messageId());
                }
            }
            return Arrays.asList(results);
        }
    }

    private OutboxSweep sweep() {
        return new OutboxSweep("orders-service", outbox, new OutboxDispatcher(outbox, outlet, state), state, time, time,
                connected::get, INTERVAL, MIN_AGE);
    }

    private static List<OutboxEntry> entries(String prefix, int n, String address) {
        List<OutboxEntry> list = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            list.add(FakeOutbox.entry("orders|s:" + prefix + i, 0, address));
        }
        return list;
    }

    private String takes() {
        return "pendingOutbox(" + MIN_AGE + ", " + OutboxSweep.BATCH_SIZE + ")";
    }

    @Test
    void runsWhenTheConsumerConnectsAndThenEveryIntervalTakingOnlyEntriesOfTheMinimumAge() {
        OutboxSweep sweep = sweep();
        sweep.start();
        outbox.add(entries("a", 3, "events").toArray(OutboxEntry[]::new));

        sweep.soon(); // the consumer connected
        time.advance(Duration.ZERO);
        assertThat(outbox.count(takes())).as("a run at connect").isEqualTo(1);
        assertThat(outlet.sent).as("nothing is old enough yet").isEmpty();

        time.advance(INTERVAL.minusNanos(1));
        assertThat(outbox.count(takes())).as("no run before the interval").isEqualTo(1);
        time.advance(Duration.ofNanos(1));
        assertThat(outbox.count(takes())).isEqualTo(2);

        time.advance(MIN_AGE); // three runs later, the entries are old enough
        assertThat(outlet.sent).hasSize(3).doesNotHaveDuplicates();
        assertThat(outlet.paths).containsOnly(SendPath.SWEEP);
        assertThat(outbox.dispatchedCount()).isEqualTo(3);
        assertThat(outbox.count("outboxDispatched(3)")).as("marked in one call").isEqualTo(1);
        assertThat(state.health().pending()).isZero();

        sweep.soon(); // a reconnect while a run is due anyway: one more run, not a second chain of runs
        time.advance(INTERVAL.multipliedBy(3));
        assertThat(outbox.count(takes())).isEqualTo(2 + 3 + 1 + 3);
    }

    @Test
    void aRunTakesFullBatchesUntilOneComesBackShortAndMarksEachBatchInOneCall() {
        OutboxSweep sweep = sweep();
        outbox.add(entries("a", 250, "events").toArray(OutboxEntry[]::new));
        time.advance(MIN_AGE);

        sweep.soon();
        time.advance(Duration.ZERO);

        assertThat(outbox.count(takes())).isEqualTo(3);
        assertThat(outbox.calls).filteredOn(c -> c.startsWith("outboxDispatched"))
                .containsExactly("outboxDispatched(100)", "outboxDispatched(100)", "outboxDispatched(50)");
        assertThat(outlet.sent).hasSize(250).doesNotHaveDuplicates();
        assertThat(outbox.dispatchedCount()).isEqualTo(250);
    }

    @Test
    void aMessageTheBrokerRefusesStaysPendingWithItsErrorRecordedReportedAndLoggedOnce() {
        OutboxSweep sweep = sweep();
        List<OutboxEntry> refused = entries("r", 3, REFUSED);
        List<OutboxEntry> fine = entries("f", 2, "events");
        outbox.add(refused.get(0), fine.get(0), refused.get(1), refused.get(2), fine.get(1));
        time.advance(MIN_AGE);

        List<String> errors;
        try (StandardErrorTee err = new StandardErrorTee()) {
            sweep.soon();
            time.advance(Duration.ZERO);
            errors = err.lines("ERROR");
        }

        assertThat(outlet.sent).containsExactly(fine.get(0).messageId(), fine.get(1).messageId());
        assertThat(outbox.dispatchedCount()).isEqualTo(2);
        for (OutboxEntry e : refused) {
            FakeOutbox.Row row = outbox.row(e.messageId());
            assertThat(row.dispatched).as("kept, never dropped").isFalse();
            assertThat(row.error).contains(e.messageId(), "'" + REFUSED + "'", CONDITION);
        }
        assertThat(errors).as("one line for the address, naming the ids, the address and the broker's condition")
                .hasSize(1);
        assertThat(errors.get(0)).contains("Outbox sweep of consumer 'orders-service'", refused.get(0).messageId(),
                refused.get(1).messageId(), refused.get(2).messageId(), "'" + REFUSED + "'", CONDITION,
                "they stay in the outbox, pending");
        ConsumerHealth.OutboxHealth health = state.health();
        assertThat(health.pending()).isEqualTo(3);
        assertThat(health.failing()).isEqualTo(3);
        assertThat(health.lastError()).contains(REFUSED, CONDITION);

        time.advance(HOLD.minusSeconds(1));
        assertThat(outbox.calls).as("held by the store: not tried again before its hold ends")
                .filteredOn(c -> c.startsWith("outboxFailed")).hasSize(3);
        time.advance(Duration.ofSeconds(1).plus(INTERVAL));
        assertThat(outbox.calls).as("tried again once the hold ended").filteredOn(c -> c.startsWith("outboxFailed"))
                .hasSize(6);
        assertThat(outbox.dispatchedCount()).isEqualTo(2);
    }

    @Test
    void aMessageNotTakenForAReasonThatMayPassIsRecordedAsFailingAndSentOnceTheBrokerTakesIt() {
        OutboxSweep sweep = sweep();
        outlet.failing.add("busy");
        OutboxEntry e = FakeOutbox.entry("orders|s:b", 0, "busy");
        outbox.add(e);
        time.advance(MIN_AGE);
        sweep.start();

        List<String> warnings;
        try (StandardErrorTee err = new StandardErrorTee()) {
            sweep.soon();
            time.advance(Duration.ZERO);
            warnings = err.lines("WARN");
        }
        assertThat(warnings).hasSize(1);
        assertThat(warnings.get(0)).contains(e.messageId(), "released by the broker", "it stays in the outbox");
        assertThat(state.health().failing()).isEqualTo(1);
        assertThat(state.health().lastError()).contains("released");

        outlet.failing.clear();
        time.advance(HOLD.plus(INTERVAL));
        assertThat(outlet.sent).containsExactly(e.messageId());
        assertThat(state.health().pending()).isZero();
        assertThat(state.health().failing()).isZero();
        assertThat(state.health().lastError()).as("cleared once nothing fails").isNull();
    }

    @Test
    void anEntryThatIsNoAmqpMessageIsKeptAndLoggedAndTheOthersGoOut() {
        OutboxSweep sweep = sweep();
        OutboxEntry broken = new OutboxEntry("orders|s:x", 0, "acemq-broken", "events", new byte[] {1, 2, 3});
        OutboxEntry fine = FakeOutbox.entry("orders|s:y", 0, "events");
        outbox.add(broken, fine);
        time.advance(MIN_AGE);

        List<String> errors;
        try (StandardErrorTee err = new StandardErrorTee()) {
            sweep.soon();
            time.advance(Duration.ZERO);
            errors = err.lines("ERROR");
        }

        assertThat(outlet.sent).containsExactly(fine.messageId());
        assertThat(outbox.row("acemq-broken").dispatched).isFalse();
        assertThat(outbox.row("acemq-broken").error).contains("acemq-broken", "not an AMQP message");
        assertThat(errors).singleElement().asString().contains("acemq-broken", "stays in the outbox");
    }

    @Test
    void whileTheBrokerIsDisconnectedItOnlyReadsTheStatusAndTheEntriesWait() {
        OutboxSweep sweep = sweep();
        sweep.start();
        outbox.add(entries("a", 2, "events").toArray(OutboxEntry[]::new));
        connected.set(false);

        time.advance(MIN_AGE.plus(INTERVAL.multipliedBy(3)));

        assertThat(outbox.count(takes())).as("nothing taken while disconnected").isZero();
        assertThat(outbox.count("outboxStatus")).isPositive();
        assertThat(outlet.sent).isEmpty();
        assertThat(outbox.calls).noneMatch(c -> c.startsWith("outboxFailed"));
        ConsumerHealth.OutboxHealth health = state.health();
        assertThat(health.pending()).isEqualTo(2);
        assertThat(health.failing()).as("nothing was tried, nothing failed").isZero();
        assertThat(health.overdue()).isFalse();

        connected.set(true);
        sweep.soon(); // the connection is back
        time.advance(Duration.ZERO);
        assertThat(outlet.sent).hasSize(2);
        assertThat(state.health().pending()).isZero();
    }

    @Test
    void whileTheStoreIsDownItSaysSoOnceTheAgeGoesOnGrowingAndHealthTurnsOverduePastTheMaximum() {
        OutboxSweep sweep = sweep();
        sweep.start();
        outbox.add(entries("a", 2, "events").toArray(OutboxEntry[]::new));
        outlet.failing.add("events"); // the first tries fail: the entries stay
        time.advance(MIN_AGE.plus(INTERVAL)); // read once: 2 pending, the oldest 40 s old
        assertThat(state.health().oldestPending()).isEqualTo(MIN_AGE.plus(INTERVAL));

        List<String> warnings;
        List<String> infos;
        try (StandardErrorTee err = new StandardErrorTee()) {
            outbox.down = true;
            int callsBefore = outbox.calls.size();
            time.advance(Duration.ofMinutes(5));
            assertThat(outbox.calls.size() - callsBefore).as("a run every interval, each failing at its first call")
                    .isEqualTo(30 * 2);
            warnings = err.lines("could not read the outbox");
            assertThat(outlet.sent).isEmpty();
            ConsumerHealth.OutboxHealth health = state.health();
            assertThat(health.pending()).as("the last status read stays").isEqualTo(2);
            assertThat(health.oldestPending()).as("and its age grows with the ticker")
                    .isEqualTo(MIN_AGE.plus(INTERVAL).plusMinutes(5));
            assertThat(health.overdue()).isTrue();

            outbox.down = false;
            outlet.failing.clear();
            time.advance(INTERVAL);
            infos = err.lines("the store answers again");
        }
        assertThat(warnings).as("one warning for the outage, not one per run").hasSize(1);
        assertThat(warnings.get(0)).contains("nothing is lost");
        assertThat(infos).hasSize(1);
        assertThat(outlet.sent).hasSize(2);
        assertThat(state.health().pending()).isZero();
        assertThat(state.health().overdue()).isFalse();
        assertThat(state.health().oldestPending()).isZero();
    }

    @Test
    void stopEndsTheRunsAndNoneIsScheduledAfterwards() {
        OutboxSweep sweep = sweep();
        sweep.start();
        time.advance(INTERVAL);
        int runs = (int) outbox.count(takes());
        assertThat(runs).isEqualTo(1);

        sweep.stop();
        sweep.soon();
        time.advance(INTERVAL.multipliedBy(5));

        assertThat(outbox.count(takes())).isEqualTo(runs);
        assertThat(time.pending()).isZero();
        assertThat(sweep.awaitIdle(System.nanoTime())).isTrue();
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void neverTwoRunsAtOnceAndARunThatFellDueMeanwhileFollowsAtOnce() throws Exception {
        ScheduledExecutorService threads = Executors.newScheduledThreadPool(2);
        try {
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            AtomicInteger running = new AtomicInteger();
            AtomicInteger most = new AtomicInteger();
            AtomicInteger sends = new AtomicInteger();
            outlet.during = () -> {
                most.accumulateAndGet(running.incrementAndGet(), Math::max);
                if (sends.incrementAndGet() == 1) {
                    inside.countDown();
                    try {
                        release.await(20, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                running.decrementAndGet();
            };
            OutboxSweep sweep = new OutboxSweep("orders-service", outbox, new OutboxDispatcher(outbox, outlet, state),
                    state, (task, delay) -> threads.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS),
                    System::nanoTime, connected::get, Duration.ofHours(1), Duration.ZERO);
            outbox.add(FakeOutbox.entry("orders|s:first", 0, "events"));

            sweep.soon();
            assertThat(inside.await(10, TimeUnit.SECONDS)).isTrue();
            outbox.add(FakeOutbox.entry("orders|s:second", 0, "events"));
            sweep.soon(); // falls due on the other thread while the first run is sending
            sweep.soon();
            release.countDown();

            await().atMost(Duration.ofSeconds(10)).until(() -> outlet.sent.size() == 2);
            assertThat(most.get()).as("runs at once").isEqualTo(1);
            sweep.stop();
            assertThat(sweep.awaitIdle(System.nanoTime() + TimeUnit.SECONDS.toNanos(10))).isTrue();
        } finally {
            threads.shutdownNow();
        }
    }

    @Test
    void aStatusReadThatBeganBeforeAFailureWasRecordedDoesNotClearItsError() {
        Instant oldest = clock.instant();
        long mark = state.mark(); // the sweep asks the store ...
        state.failed("message m to 'events' was rejected (amqp:resource-limit-exceeded: full) by the broker");
        state.read(new OutboxStore.Status(1, oldest, 0), mark); // ... which answered before the failure was recorded
        assertThat(state.health().lastError()).as("kept: the answer predates the failure")
                .contains("amqp:resource-limit-exceeded");

        state.read(new OutboxStore.Status(1, oldest, 1), state.mark());
        assertThat(state.health().lastError()).contains("amqp:resource-limit-exceeded");
        state.read(new OutboxStore.Status(1, oldest, 0), state.mark()); // dispatched since: nothing fails any more
        assertThat(state.health().lastError()).isNull();
    }
}
