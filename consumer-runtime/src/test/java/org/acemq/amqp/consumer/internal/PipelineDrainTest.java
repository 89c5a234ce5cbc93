package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.Subscription;
import org.junit.jupiter.api.Test;

/**
 * The shutdown stage: what is left when the subscription stops (admitted and not started, then still queued in the
 * client) goes through the same stages with "stopping" in its facts. At-least-once: released, not run, claims
 * released first in one call. At-most-once: run, since the broker settled them already.
 */
class PipelineDrainTest {

    private final List<String> handled = new CopyOnWriteArrayList<>();
    private final LinkedBlockingQueue<org.apache.qpid.protonj2.client.Delivery> queue = new LinkedBlockingQueue<>();
    private final Deliveries deliveries = new Deliveries(queue);
    private final HandlerSlot slot = new HandlerSlot();

    private Stages stages(AcknowledgementMode mode) {
        return new Stages(Subscription.builder(Deliveries.ADDRESS, e -> handled.add(Stages.id(e.id())))
                .acknowledgementMode(mode).build(), Duration.ofSeconds(1), deliveries);
    }

    private static Pipeline leftovers(Stages s) {
        return s.pipeline;
    }

    private void queued(String... ids) {
        for (String id : ids) {
            queue.add(Deliveries.amqp(Deliveries.message(id, "body of " + id)));
        }
    }

    @Test
    void atLeastOnceAdmittedDeliveriesAreReleasedNotRunTheirClaimsReleasedInOneCall() {
        Stages s = stages(AcknowledgementMode.AT_LEAST_ONCE);
        List<Delivery> admitted = s.admitted("a", "b", "c");
        s.log.clear();
        s.stopping.set(true);

        leftovers(s).drain(admitted, null, slot);

        assertThat(handled).isEmpty();
        assertThat(s.log).containsExactly("releaseAll [orders|s:a, orders|s:b, orders|s:c]",
                "settle [orders|s:a] RELEASED/SHUTDOWN", "settle [orders|s:b] RELEASED/SHUTDOWN",
                "settle [orders|s:c] RELEASED/SHUTDOWN");
        assertThat(admitted).allMatch(d -> d.state() == Delivery.State.SETTLED && d.claim == null && d.completed);
        assertThat(s.memory.acquire(s.key("a")).result()).as("released: the key can be claimed again")
                .isEqualTo(org.acemq.amqp.api.IdempotencyStore.ClaimResult.CLAIMED);
    }

    @Test
    void atLeastOnceACopyLeftToClaimAtStartIsReleasedWithoutAStoreCallOfItsOwn() {
        Stages s = stages(AcknowledgementMode.AT_LEAST_ONCE);
        List<Delivery> admitted = s.admitted("a", "b", "a");
        s.log.clear();
        s.stopping.set(true);

        leftovers(s).drain(admitted, null, slot);

        assertThat(handled).isEmpty();
        assertThat(s.log("releaseAll")).containsExactly("releaseAll [orders|s:a, orders|s:b]");
        assertThat(s.log).hasSize(4);
        assertThat(s.settlement.summary()).containsExactlyInAnyOrder("a RELEASED/SHUTDOWN", "b RELEASED/SHUTDOWN",
                "a RELEASED/SHUTDOWN");
    }

    @Test
    void atLeastOnceWhatTheClientStillHoldsGoesBackUnclaimedAndUnread() {
        Stages s = stages(AcknowledgementMode.AT_LEAST_ONCE);
        queued("q1", "q2");
        s.stopping.set(true);

        leftovers(s).drain(List.of(), deliveries.link, slot);

        assertThat(queue).isEmpty();
        assertThat(handled).isEmpty();
        assertThat(s.settlement.summary()).containsExactly("q1 RELEASED/SHUTDOWN", "q2 RELEASED/SHUTDOWN");
        assertThat(s.claimCalls()).isZero();
        assertThat(slot.current).isNull();
    }

    @Test
    void atMostOnceLeftoversAreRunSinceTheBrokerSettledThemAlready() {
        Stages s = stages(AcknowledgementMode.AT_MOST_ONCE);
        List<Delivery> admitted = s.admitted("a", "b");
        queued("q1");
        s.stopping.set(true);

        leftovers(s).drain(admitted, deliveries.link, slot);

        assertThat(handled).containsExactly("a", "b", "q1");
        assertThat(s.settlement.summary()).containsExactly("a ACCEPTED/PROCESSED", "b ACCEPTED/PROCESSED",
                "q1 ACCEPTED/PROCESSED");
        assertThat(s.settlement.sent).allMatch(Stages.Sent::confirmedInStore);
        assertThat(s.log("releaseAll")).isEmpty();
    }

    @Test
    void aLeftoverWhoseLinkDiedIsReleasedEvenWhenNotStopping() {
        Stages s = stages(AcknowledgementMode.AT_LEAST_ONCE);
        List<Delivery> admitted = s.admitted("a");
        deliveries.link.invalidate(ReceiverLink.End.DETACHED);

        leftovers(s).drain(admitted, null, slot);

        assertThat(handled).isEmpty();
        assertThat(s.log).containsSubsequence("release [orders|s:a]", "settle [orders|s:a] RELEASED/SHUTDOWN");
    }
}
