package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import org.acemq.amqp.consumer.Subscription;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The take stage on one handler thread (the test's): the thread that finds nothing admitted leads, takes one
 * delivery and what else the client has queued (up to the bound), has them admitted with one store call, keeps the
 * first and leaves the rest waiting; a thread that finds one waiting takes it without touching the client.
 */
@Timeout(30)
class IntakeTest {

    private final LinkedBlockingQueue<org.apache.qpid.protonj2.client.Delivery> queue = new LinkedBlockingQueue<>();
    private final Deliveries deliveries = new Deliveries(queue);
    private final HandlerSlot slot = new HandlerSlot();

    private Stages stages(int concurrency, int prefetch) {
        return new Stages(Subscription.builder(Deliveries.ADDRESS, e -> { }).concurrency(concurrency)
                .prefetch(prefetch).build(), Duration.ofSeconds(1), deliveries);
    }

    /** @param averageNanos the handlers' average run time so far @return the test's view of the take stage */
    private TakeStage intake(Stages s, long averageNanos) {
        s.handlerTime(averageNanos);
        return new TakeStage(s);
    }

    /** The take stage as a handler thread meets it: through the schedule, leading the intake when nothing waits. */
    private final class TakeStage {
        final Stages s;

        TakeStage(Stages s) {
            this.s = s;
        }

        Delivery next(HandlerSlot slot) {
            return s.next(slot);
        }

        boolean busy() {
            return s.schedule.busy();
        }

        List<Delivery> drain() {
            return s.schedule.drain();
        }
    }

    private void queued(String... ids) {
        for (String id : ids) {
            queue.add(Deliveries.amqp(Deliveries.message(id, "body of " + id)));
        }
    }

    private static List<String> ids(List<Delivery> ds) {
        return ds.stream().map(d -> Stages.id(d.key())).toList();
    }

    @Test
    void aLoneDeliveryGoesStraightThroughWithOneClaim() {
        Stages s = stages(4, 10);
        TakeStage intake = intake(s, Intake.HORIZON.toNanos());
        queued("a");

        Delivery d = intake.next(slot);

        assertThat(Stages.id(d.key())).isEqualTo("a");
        assertThat(d.state()).isEqualTo(Delivery.State.ADMITTED);
        assertThat(d.claim).isNotNull();
        assertThat(d.arrival.counted()).as("counted against its link").isTrue();
        assertThat(deliveries.link.inHand()).isEqualTo(1);
        assertThat(s.log).containsExactly("acquire [orders|s:a]");
        assertThat(deliveries.receives).hasValue(1);
        assertThat(intake.busy()).as("nothing admitted waits").isFalse();
        assertThat(intake.drain()).isEmpty();
    }

    @Test
    void theLeaderTakesWhatIsQueuedInOneBatchUpToTheWindow() {
        Stages s = stages(1, 4); // window 5
        TakeStage intake = intake(s, 1); // fast handlers: the window bounds the batch
        queued("a", "b", "c", "d", "e", "f", "g");

        Delivery first = intake.next(slot);

        assertThat(Stages.id(first.key())).isEqualTo("a");
        assertThat(s.log).containsExactly(
                "acquireAll [orders|s:a, orders|s:b, orders|s:c, orders|s:d, orders|s:e]");
        assertThat(deliveries.receives).as("one blocking receive, the rest taken without waiting").hasValue(1);
        assertThat(queue).as("left in the client for the next batch").hasSize(2);
        assertThat(intake.busy()).isTrue();

        List<Delivery> waiting = intake.drain();
        assertThat(ids(waiting)).containsExactly("b", "c", "d", "e");
        assertThat(waiting).allMatch(d -> d.state() == Delivery.State.ADMITTED && d.claim != null);
        assertThat(intake.drain()).as("removed").isEmpty();
        assertThat(intake.busy()).isFalse();
    }

    @Test
    void theBatchIsBoundedByWhatTheThreadsCanStartWithinTheHorizon() {
        Stages s = stages(2, 10);
        TakeStage intake = intake(s, Intake.HORIZON.toNanos()); // a handler takes the whole horizon
        queued("a", "b", "c", "d", "e");

        intake.next(slot);

        assertThat(s.log).as("one per thread").containsExactly("acquireAll [orders|s:a, orders|s:b]");
        assertThat(queue).hasSize(3);
    }

    @Test
    void aThreadTakesTheOldestAdmittedDeliveryWithoutTouchingTheClient() {
        Stages s = stages(1, 4);
        TakeStage intake = intake(s, 1);
        queued("a", "b", "c");

        assertThat(Stages.id(intake.next(slot).key())).isEqualTo("a");
        assertThat(Stages.id(intake.next(slot).key())).isEqualTo("b");
        assertThat(Stages.id(intake.next(slot).key())).isEqualTo("c");

        assertThat(deliveries.receives).hasValue(1);
        assertThat(s.claimCalls()).isEqualTo(1);
    }

    @Test
    void deliveriesDecidedAtAdmissionAreNotHandedToTheThread() {
        Stages s = stages(1, 4);
        TakeStage intake = intake(s, 1);
        queue.add(deliveries.undecodable().amqp());
        queued("a");

        Delivery d = intake.next(slot);

        assertThat(Stages.id(d.key())).isEqualTo("a");
        assertThat(s.settlement.summary()).containsExactly("null REJECTED/UNDECODABLE");
        assertThat(intake.drain()).isEmpty();
    }

    @Test
    void onceTheSubscriptionStopsAThreadWithNothingAdmittedGetsNothing() {
        Stages s = stages(1, 4);
        TakeStage intake = intake(s, 1);
        queued("a");
        s.source.stopping = true;

        assertThat(intake.next(slot)).isNull();

        assertThat(deliveries.receives).as("the client is not read").hasValue(0);
        assertThat(s.log).isEmpty();
    }

    @Test
    void aDeliveryAdmittedBeforeTheStopIsStillHandedOut() {
        Stages s = stages(1, 4);
        TakeStage intake = intake(s, 1);
        queued("a", "b");
        intake.next(slot);
        s.source.stopping = true;

        Delivery b = intake.next(slot);

        assertThat(Stages.id(b.key())).as("its runner decides what stopping makes of it").isEqualTo("b");
        assertThat(intake.next(slot)).isNull();
    }
}
