package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreOperation;
import org.acemq.amqp.consumer.Subscription;
import org.junit.jupiter.api.Test;

/** The settle stage: now or after the verdict's delay (none while stopping); an unexpected failure settled once. */
class EndingsSettleTest {

    private static final Verdict LATER = Verdict.later(Outcome.RELEASED, SettleReason.IN_PROGRESS,
            Duration.ofSeconds(1));

    private final Stages s = new Stages(Subscription.builder(Deliveries.ADDRESS, e -> { }).build());

    /** @return a delivery read and claimed, its handler running */
    private Delivery running(String id) {
        Delivery d = s.admitted(id).get(0);
        d.moveTo(Delivery.State.RUNNING);
        return d;
    }

    @Test
    void aVerdictWithoutDelayIsSentAtOnce() {
        Delivery d = s.read("a");

        assertThat(s.endings.settle(d, Verdict.DUPLICATE)).isTrue();

        assertThat(s.settlement.summary()).containsExactly("a ACCEPTED/DUPLICATE");
        assertThat(d.state()).isEqualTo(Delivery.State.SETTLED);
    }

    @Test
    void whatTheSettlementReportsIsReturned() {
        s.settlement.abandon = true;
        Delivery d = s.read("a");

        assertThat(s.endings.settle(d, Verdict.DUPLICATE)).as("abandoned: its link is gone").isFalse();
        assertThat(d.state()).isEqualTo(Delivery.State.SETTLED);
    }

    @Test
    void aDelayedVerdictHoldsTheDeliveryUntilTimeHasPassed() {
        Delivery d = s.read("a");

        assertThat(s.endings.settle(d, LATER)).as("scheduled counts as sent").isTrue();

        assertThat(d.state()).isEqualTo(Delivery.State.HELD);
        assertThat(s.settlement.sent).isEmpty();
        s.advance(Duration.ofMillis(999));
        assertThat(s.settlement.sent).isEmpty();
        assertThat(s.holds.oldest(s.time.read())).as("the hold is tracked").isEqualTo(Duration.ofMillis(999).toNanos());
        s.advance(Duration.ofMillis(1));
        assertThat(s.settlement.summary()).containsExactly("a RELEASED/IN_PROGRESS");
        assertThat(s.settlement.sent.get(0).time()).isEqualTo(Duration.ofSeconds(1).toNanos());
        assertThat(d.state()).isEqualTo(Delivery.State.SETTLED);
        assertThat(s.holds.oldest(s.time.read())).isZero();
    }

    @Test
    void whileStoppingTheDelayIsDroppedAndTheDeliveryGoesBackAtOnce() {
        s.stopping.set(true);
        Delivery d = s.read("a");

        s.endings.settle(d, LATER);

        assertThat(s.settlement.summary()).containsExactly("a RELEASED/IN_PROGRESS");
        assertThat(s.settlement.sent.get(0).state()).as("never held").isEqualTo(Delivery.State.SETTLED);
        assertThat(s.settlement.sent.get(0).time()).isZero();
    }

    @Test
    void heldDeliveriesAreSettledAllAtOnceAtShutdown() {
        Delivery a = s.read("a");
        Delivery b = s.read("b");
        s.endings.settle(a, LATER);
        s.endings.settle(b, LATER);

        s.holds.settleAll();

        assertThat(s.settlement.summary()).containsExactlyInAnyOrder("a RELEASED/IN_PROGRESS",
                "b RELEASED/IN_PROGRESS");
        s.advance(Duration.ofSeconds(2));
        assertThat(s.settlement.sent).as("the cancelled holds do not fire again").hasSize(2);
    }

    @Test
    void anUnexpectedFailureReleasesTheClaimAndSettlesReleasedOnce() {
        Delivery d = running("a");

        Verdict v = s.endings.failed(d, new IllegalStateException("test: a bug"));

        assertThat(v).isEqualTo(Verdict.settle(Outcome.RELEASED, SettleReason.FAILED));
        assertThat(s.log).containsExactly("acquire [orders|s:a]", "release [orders|s:a]",
                "settle [orders|s:a] RELEASED/FAILED");
        assertThat(d.claim).isNull();
        assertThat(d.claimedNanos).isZero();
        assertThat(d.state()).isEqualTo(Delivery.State.SETTLED);
        assertThat(d.completed).isTrue();
        assertThat(d.sent).isTrue();

        assertThat(s.endings.failed(d, new IllegalStateException("test: again"))).as("settled already").isNull();
        assertThat(s.log).as("nothing more: no second release, no second disposition").hasSize(3);
    }

    @Test
    void anUnexpectedFailureOnAHeldDeliveryTakesTheHoldBackAndSettlesOnce() {
        Delivery d = s.read("a");
        s.endings.settle(d, LATER);
        assertThat(d.state()).isEqualTo(Delivery.State.HELD);

        assertThat(s.endings.failed(d, new IllegalStateException("test"))).isNotNull();

        assertThat(s.settlement.summary()).containsExactly("a RELEASED/FAILED");
        assertThat(s.holds.oldest(s.time.read())).as("the hold is gone").isZero();
        s.advance(Duration.ofSeconds(2)); // the hold's time passes: it does not fire
        assertThat(s.settlement.summary()).containsExactly("a RELEASED/FAILED");
    }

    @Test
    void anUnexpectedFailureOnASettledDeliverySendsNothingMore() {
        Delivery d = s.read("a");
        s.endings.settle(d, Verdict.DUPLICATE);

        assertThat(s.endings.failed(d, new IllegalStateException("test: after the fact"))).isNull();

        assertThat(s.settlement.summary()).containsExactly("a ACCEPTED/DUPLICATE");
    }

    @Test
    void aClaimThatCannotBeReleasedDoesNotKeepTheDeliveryFromBeingSettled() {
        Delivery d = running("a");
        s.store.failNext(StoreOperation.RELEASE, Integer.MAX_VALUE);

        s.endings.failed(d, new IllegalStateException("test: a bug"));

        assertThat(s.log).containsSubsequence("release [orders|s:a]", "settle [orders|s:a] RELEASED/FAILED");
        assertThat(d.state()).isEqualTo(Delivery.State.SETTLED);
        assertThat(d.completed).isTrue();
    }
}
