package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;
import org.acemq.amqp.consumer.Subscription;
import org.junit.jupiter.api.Test;

/**
 * The end stage's batching: claims handed over without driving wait; one drive ends them all with one
 * {@code confirmAll} and one {@code releaseAll} (release for every verdict but accepted), then settles them in the
 * order they were handed over, none before its claim's end is recorded.
 */
class EndingsTest {

    private static final Verdict FAILED = Verdict.settle(Outcome.RELEASED, SettleReason.FAILED);

    private final Stages s = new Stages(Subscription.builder(Deliveries.ADDRESS, e -> { }).build());

    private List<Delivery> running(String... ids) {
        List<Delivery> ds = s.admitted(ids);
        ds.forEach(d -> d.moveTo(Delivery.State.RUNNING));
        s.log.clear();
        return ds;
    }

    @Test
    void deliveriesHandedOverWithoutDrivingWaitAndOneDriveConfirmsThemWithOneCall() {
        List<Delivery> ds = running("a", "b", "c");

        for (Delivery d : ds) {
            assertThat(s.endings.end(d, Verdict.PROCESSED, false)).as("handed over").isTrue();
            assertThat(d.state()).isEqualTo(Delivery.State.ENDING);
        }
        assertThat(s.log).as("nothing before the drive").isEmpty();
        assertThat(ds).noneMatch(d -> d.completed);

        s.endings.drive();

        assertThat(s.log).containsExactly("confirmAll [orders|s:a, orders|s:b, orders|s:c]",
                "settle [orders|s:a] ACCEPTED/PROCESSED", "settle [orders|s:b] ACCEPTED/PROCESSED",
                "settle [orders|s:c] ACCEPTED/PROCESSED");
        assertThat(s.settlement.sent).allMatch(Stages.Sent::confirmedInStore);
        assertThat(ds).allMatch(d -> d.completed && d.sent && d.claim == null && d.claimedNanos == 0
                && d.nextPending == null && d.state() == Delivery.State.SETTLED);

        s.endings.drive();
        assertThat(s.log).as("nothing left to end").hasSize(4);
    }

    @Test
    void confirmsAndReleasesOfOneBatchAreOneCallEachAndNothingIsSettledBefore() {
        List<Delivery> ds = running("a", "b", "c", "d");

        s.endings.end(ds.get(0), Verdict.PROCESSED, false);
        s.endings.end(ds.get(1), FAILED, false);
        s.endings.end(ds.get(2), Verdict.reject(SettleReason.PERMANENT, "x:bad", "test"), false);
        s.endings.end(ds.get(3), Verdict.PROCESSED, false);
        s.endings.drive();

        assertThat(s.log).containsExactly("releaseAll [orders|s:b, orders|s:c]",
                "confirmAll [orders|s:a, orders|s:d]", "settle [orders|s:a] ACCEPTED/PROCESSED",
                "settle [orders|s:b] RELEASED/FAILED", "settle [orders|s:c] REJECTED/PERMANENT",
                "settle [orders|s:d] ACCEPTED/PROCESSED");
        assertThat(s.memory.acquire(s.key("b")).attempt()).as("released").isEqualTo(2);
    }

    @Test
    void aLoneDeliveryDrivenAtOnceCostsOneSingleCall() {
        Delivery d = running("a").get(0);

        assertThat(s.endings.end(d, Verdict.PROCESSED, true)).as("ended here, not handed over").isFalse();

        assertThat(s.log).containsExactly("confirm [orders|s:a]", "settle [orders|s:a] ACCEPTED/PROCESSED");
        assertThat(d.completed).isTrue();
    }

    @Test
    void aDeliveryWithoutAClaimIsSettledAtOnceEvenWhenNotDriven() {
        Delivery d = s.read("a");

        assertThat(s.endings.end(d, Verdict.DUPLICATE, false)).as("nothing to hand over").isFalse();

        assertThat(s.settlement.summary()).containsExactly("a ACCEPTED/DUPLICATE");
        assertThat(d.completed).isTrue();
        assertThat(s.log).containsExactly("settle [orders|s:a] ACCEPTED/DUPLICATE");
    }

    @Test
    void aConfirmTheStoreRefusesForOneKeyIsSettledAsThePolicySaysAndTheOthersAreConfirmed() {
        List<Delivery> ds = running("a", "bad", "c");
        s.store.refuseConfirmOf(s.key("bad"));

        ds.forEach(d -> s.endings.end(d, Verdict.PROCESSED, false));
        s.endings.drive();

        assertThat(s.log).startsWith("confirmAll [orders|s:a, orders|s:bad, orders|s:c]",
                "confirmAll [orders|s:a, orders|s:c]");
        assertThat(s.settlement.summary()).as("confirmNotRecorded: accepted anyway")
                .containsExactly("a ACCEPTED/PROCESSED", "bad ACCEPTED/PROCESSED", "c ACCEPTED/PROCESSED");
        assertThat(s.settlement.sent).extracting(Stages.Sent::confirmedInStore).containsExactly(true, false, true);
        assertThat(s.gate.paused()).as("a refused key is no outage").isFalse();
    }

    @Test
    void theHeartbeatSeesDeliveriesWhoseClaimIsEndingOnlyWhileItEnds() {
        Stages beat = new Stages(Subscription.builder(Deliveries.ADDRESS, e -> { }).build());
        Endings renewing = new Endings("orders", beat.policy, beat.access, beat.gate, beat.settlement, beat.holds,
                beat.time, beat.endsScheduler, Duration.ofSeconds(1), beat.stopping::get, 1_000, d -> { });
        Delivery d = beat.admitted("a").get(0);
        d.moveTo(Delivery.State.RUNNING);

        renewing.end(d, Verdict.PROCESSED, false);
        List<Delivery> seen = new java.util.ArrayList<>();
        renewing.forEachEnding(seen::add);
        assertThat(seen).as("its lease is renewed until the confirm is recorded").containsExactly(d);
        assertThat(d.nextBeatNanos).isEqualTo(beat.time.read() + 1_000);

        renewing.drive();
        seen.clear();
        renewing.forEachEnding(seen::add);
        assertThat(seen).isEmpty();
    }

    @Test
    @org.junit.jupiter.api.Timeout(30)
    void whileAStoreCallIsInFlightOtherThreadsHandOverAndTheLeaderEndsTheirClaimsInItsNextCall() throws Exception {
        List<Delivery> ds = running("a", "b", "c");
        s.store.hold(StoreOperation.CONFIRM);
        Thread leader = new Thread(() -> s.endings.end(ds.get(0), Verdict.PROCESSED, true), "leader");
        leader.start();
        await("the leader is in its confirm").atMost(Duration.ofSeconds(10))
                .until(() -> s.store.waiting(StoreOperation.CONFIRM) == 1);

        s.endings.end(ds.get(1), Verdict.PROCESSED, true);
        s.endings.end(ds.get(2), FAILED, true);

        assertThat(ds.get(1).completed).as("handed over: this thread goes on at once").isFalse();
        assertThat(ds.get(2).completed).isFalse();
        assertThat(s.log).containsExactly("confirm [orders|s:a]");
        s.store.open(StoreOperation.CONFIRM);
        leader.join();

        assertThat(s.log).containsExactly("confirm [orders|s:a]", "settle [orders|s:a] ACCEPTED/PROCESSED",
                "release [orders|s:c]", "confirm [orders|s:b]", "settle [orders|s:b] ACCEPTED/PROCESSED",
                "settle [orders|s:c] RELEASED/FAILED");
        assertThat(ds).allMatch(d -> d.completed && d.state() == Delivery.State.SETTLED);
    }

    /**
     * A retry in place whose back-off ends at once (a scheduler that runs it straight away, as a loaded scheduler
     * thread may): the delivery is back in the schedule, to run again, before the end stage returns. The first run's
     * completion must not be taken for the next run's: that run has not completed.
     */
    @Test
    void aRetryInPlaceThatIsDueAtOnceStartsItsNextRunUncompleted() {
        List<Delivery> retried = new java.util.ArrayList<>();
        org.acemq.amqp.consumer.Scheduler atOnce = (task, delay) -> {
            task.run();
            return java.util.concurrent.CompletableFuture.completedFuture(null);
        };
        Endings ending = new Endings("orders", s.policy, s.access, s.gate, s.settlement, new Holds(atOnce), s.time,
                s.endsScheduler, Duration.ofSeconds(1), s.stopping::get, 0, retried::add);
        Delivery d = running("a").get(0);
        d.retryPending = true;

        ending.end(d, Verdict.retry(Outcome.MODIFIED, Duration.ZERO), true);

        assertThat(retried).as("back in the schedule").containsExactly(d);
        assertThat(s.log).containsExactly("release [orders|s:a]");
        assertThat(d.state()).isEqualTo(Delivery.State.ADMITTED);
        assertThat(d.completed).as("its next run has not completed").isFalse();
        assertThat(d.sent).isFalse();
        assertThat(d.claimAtStart).as("claimed again when it starts").isTrue();
    }
}
