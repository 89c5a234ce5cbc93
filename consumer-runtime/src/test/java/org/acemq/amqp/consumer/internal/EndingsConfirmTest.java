package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;
import org.acemq.amqp.consumer.Subscription;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The store side of the end stage, in moved time: a confirm is retried with a doubling pause (waited on the
 * scheduler, so the test moves it) while the store fails, up to {@code confirmTimeout}; what is not recorded by then
 * is settled as {@link OutcomePolicy#confirmNotRecorded} says. A release that fails blocks nothing.
 */
@Timeout(30)
class EndingsConfirmTest {

    private static final Duration CONFIRM_TIMEOUT = Duration.ofSeconds(1);

    private final Stages s = new Stages(Subscription.builder(Deliveries.ADDRESS, e -> { }).build(), CONFIRM_TIMEOUT,
            new Deliveries());

    /** @return a delivery of {@code id}, claimed and its handler done */
    private Delivery running(String id) {
        Delivery d = s.admitted(id).get(0);
        d.moveTo(Delivery.State.RUNNING);
        return d;
    }

    /**
     * Ends {@code d}'s claim on another thread (it waits on the scheduler between attempts) and, from this thread, moves
     * time by exactly each pause it asks for, once it asks, until it is done.
     */
    private void endInMovedTime(Delivery d, Verdict v) throws InterruptedException {
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread ender = new Thread(() -> s.endings.end(d, v, true), "ender");
        ender.setUncaughtExceptionHandler((t, e) -> failed.set(e));
        ender.start();
        int moved = 0;
        while (true) {
            int seen = moved;
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> s.endsScheduler.delays.size() > seen || !ender.isAlive());
            if (s.endsScheduler.delays.size() == seen) {
                break; // done: no pause asked for since the last move
            }
            s.advance(s.endsScheduler.delays.get(moved++));
        }
        ender.join();
        assertThat(failed.get()).isNull();
    }

    private static List<Long> millis(List<Long> nanos) {
        List<Long> ms = new ArrayList<>();
        for (long n : nanos) {
            ms.add(Duration.ofNanos(n).toMillis());
        }
        return ms;
    }

    @Test
    void aStoreThatAnswersWithinTheTimeoutLosesNothing() throws Exception {
        Delivery d = running("a");
        s.store.failNext(StoreOperation.CONFIRM, 3);

        endInMovedTime(d, Verdict.PROCESSED);

        assertThat(millis(s.confirmTimes)).as("first at once, then after 20, 40, 80 ms")
                .containsExactly(0L, 20L, 60L, 140L);
        assertThat(s.settlement.summary()).containsExactly("a ACCEPTED/PROCESSED");
        Stages.Sent sent = s.settlement.sent.get(0);
        assertThat(sent.confirmedInStore()).isTrue();
        assertThat(sent.time()).as("settled only once recorded").isEqualTo(Duration.ofMillis(140).toNanos());
        assertThat(s.pauses).as("the first failure told the gate").hasValue(1);
    }

    @Test
    void aConfirmThatIsNotRecordedWithinTheTimeoutIsSettledAsThePolicySays() throws Exception {
        Delivery d = running("a");
        s.store.failNext(StoreOperation.CONFIRM, Integer.MAX_VALUE);

        endInMovedTime(d, Verdict.PROCESSED);

        List<Long> times = millis(s.confirmTimes);
        assertThat(times).as("retried, the pause doubling").hasSizeGreaterThan(3).startsWith(0L, 20L, 60L, 140L);
        assertThat(times).as("never after the timeout").allMatch(t -> t <= CONFIRM_TIMEOUT.toMillis());
        assertThat(s.endsScheduler.delays).as("one pause between two attempts").hasSize(times.size() - 1);
        int last = s.endsScheduler.delays.size() - 1;
        for (int i = 1; i < last; i++) {
            assertThat(s.endsScheduler.delays.get(i)).isEqualTo(s.endsScheduler.delays.get(i - 1).multipliedBy(2));
        }
        assertThat(s.endsScheduler.delays.get(last)).as("the last pause is cut to what is left of the timeout")
                .isLessThanOrEqualTo(s.endsScheduler.delays.get(last - 1).multipliedBy(2));
        assertThat(times.get(times.size() - 1)).as("a last attempt at the deadline itself")
                .isEqualTo(CONFIRM_TIMEOUT.toMillis());
        assertThat(s.settlement.summary()).as("confirmNotRecorded: accepted anyway (the work is done)")
                .containsExactly("a ACCEPTED/PROCESSED");
        Stages.Sent sent = s.settlement.sent.get(0);
        assertThat(sent.confirmedInStore()).isFalse();
        assertThat(sent.time()).as("not before the retries gave up").isEqualTo(s.confirmTimes
                .get(times.size() - 1));
        assertThat(d.state()).isEqualTo(Delivery.State.SETTLED);
        assertThat(d.completed).isTrue();
    }

    @Test
    void aConsumerClosedDuringTheRetriesStopsThemAtOnceInsteadOfSpinning() {
        Delivery d = running("a");
        s.store.failNext(StoreOperation.CONFIRM, Integer.MAX_VALUE);
        s.endsScheduler.closed = true;

        s.endings.end(d, Verdict.PROCESSED, true); // on this thread: returns only once settled

        assertThat(s.confirmTimes).as("one attempt, no retry without a pause").hasSize(1);
        assertThat(s.settlement.summary()).containsExactly("a ACCEPTED/PROCESSED");
        assertThat(s.settlement.sent.get(0).confirmedInStore()).isFalse();
    }

    @Test
    void aReleaseThatFailsDoesNotKeepTheDeliveryFromBeingSettled() {
        Delivery d = running("a");
        s.store.failNext(StoreOperation.RELEASE, Integer.MAX_VALUE);

        s.endings.end(d, Verdict.settle(Outcome.RELEASED, SettleReason.FAILED), true);

        assertThat(s.log).containsSubsequence("release [orders|s:a]", "settle [orders|s:a] RELEASED/FAILED");
        assertThat(s.endsScheduler.delays).as("a release is not retried: its lease lapses").isEmpty();
        assertThat(s.time.read()).isZero();
        assertThat(s.pauses).as("an outage as far as the gate can tell").hasValue(1);
        assertThat(d.completed).isTrue();
    }

    @Test
    void aConfirmTheStoreRefusesIsNotRetried() {
        Delivery d = running("a");
        s.store.refuseConfirmOf(s.key("a"));

        s.endings.end(d, Verdict.PROCESSED, true);

        assertThat(s.log("confirm")).hasSize(1);
        assertThat(s.endsScheduler.delays).isEmpty();
        assertThat(s.settlement.summary()).containsExactly("a ACCEPTED/PROCESSED");
        assertThat(s.settlement.sent.get(0).confirmedInStore()).isFalse();
        assertThat(s.pauses).hasValue(0);
    }

    @Test
    void theClaimEndsOnTheirOwnConfirmAndReleaseInOneCallEach() {
        List<Delivery> ds = s.admitted("a", "b");
        s.log.clear();

        assertThat(s.endings.confirm(List.of(ds.get(0).claim, ds.get(1).claim))).as("all recorded").isEmpty();
        assertThat(s.log).containsExactly("confirmAll [orders|s:a, orders|s:b]");

        List<Delivery> more = s.admitted("c", "d");
        s.log.clear();
        s.endings.release(List.of(more.get(0).claim, more.get(1).claim));
        assertThat(s.log).containsExactly("releaseAll [orders|s:c, orders|s:d]");
    }
}
