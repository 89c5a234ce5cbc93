package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.KeySource;
import org.acemq.amqp.consumer.RetryBackoff;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.Message;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The ordered processing mode on one test thread: one delivery per key at a time, in arrival order, keys side by side;
 * a transient failure retried in place holds its key; a key's deliveries beyond its backlog give their place in the
 * window back (parked), and the intake takes no more while the parked limit or the parked bytes are reached.
 */
@Timeout(30)
class KeyOrderTest {

    private final LinkedBlockingQueue<org.apache.qpid.protonj2.client.Delivery> queue = new LinkedBlockingQueue<>();
    private final Deliveries deliveries = new Deliveries(queue);
    private final HandlerSlot slot = new HandlerSlot();
    private final List<String> handled = new CopyOnWriteArrayList<>();
    private final Set<String> failOnce = ConcurrentHashMap.newKeySet();

    private Stages ordered(int keyBacklog, int parkedLimit) {
        return ordered(keyBacklog, parkedLimit, Subscription.DEFAULT_PARKED_BYTES);
    }

    private Stages ordered(int keyBacklog, int parkedLimit, long parkedBytes) {
        Subscription spec = Subscription.builder(Deliveries.ADDRESS, e -> {
            handled.add(e.messageId() + "");
            if (failOnce.remove(e.messageId() + "")) {
                throw new IllegalStateException("test: a transient failure");
            }
            if ("poison".equals(e.body())) {
                throw new PermanentMessageException("test: never works");
            }
        }).orderBy(KeySource.groupId()).concurrency(4).prefetch(20).keyBacklog(keyBacklog).parkedLimit(parkedLimit)
                .parkedBytes(parkedBytes).retryBackoff(RetryBackoff.of(Duration.ofMillis(100), Duration.ofMillis(100), 1.0, 0)).build();
        Stages s = new Stages(spec, Duration.ofSeconds(1), deliveries);
        s.handlerTime(1);
        return s;
    }

    /** Queues messages "key:n" of group "key" (no group for a name without a colon). */
    private void queued(String... ids) {
        for (String id : ids) {
            Message<String> m = Deliveries.message(id, "body of " + id);
            int colon = id.indexOf(':');
            try {
                if (colon > 0) {
                    m.groupId(id.substring(0, colon));
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            queue.add(Deliveries.amqp(m));
        }
    }

    private static String id(List<Delivery> work) {
        return work == null ? null : Stages.id(work.get(0).key());
    }

    /** @return the work the schedule hands out next without waiting (null if nothing may run now) */
    private static List<Delivery> poll(Stages s) {
        synchronized (s.schedule.lock) {
            return s.schedule.poll(s.time.read(), false);
        }
    }

    @Test
    void aKeysDeliveriesRunOneAtATimeInArrivalOrderAndOtherKeysBesideThem() {
        Stages s = ordered(4, 100);
        queued("a:1", "b:1", "a:2", "c", "b:2", "a:3");
        Delivery first = s.next(slot); // leads: takes and admits all six

        assertThat(Stages.id(first.key())).isEqualTo("a:1");
        List<Delivery> b1 = poll(s);
        List<Delivery> c = poll(s);
        assertThat(List.of(id(b1), id(c))).containsExactly("b:1", "c");
        assertThat(poll(s)).as("a:2 waits for a:1, b:2 for b:1").isNull();

        s.schedule.done(b1);
        List<Delivery> b2 = poll(s);
        assertThat(id(b2)).isEqualTo("b:2");
        s.schedule.done(List.of(first));
        assertThat(poll(s)).as("a:1 was handed out as work of its own, not this list").isNull();
    }

    @Test
    void runningThroughThePipelineEveryKeyKeepsItsOrderAndKeyslessOnesRunFreely() {
        Stages s = ordered(4, 100);
        queued("a:1", "b:1", "a:2", "x", "b:2", "a:3", "y");

        List<String> ran = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            List<Delivery> work = s.schedule.next();
            if (work == Schedule.LEAD) {
                s.pipeline.lead(slot);
                i--;
                continue;
            }
            ran.add(id(work));
            s.pipeline.run(work.get(0));
            s.schedule.done(work);
        }

        assertThat(handled).containsExactly(ran.toArray(String[]::new));
        assertThat(handled).containsSubsequence("a:1", "a:2", "a:3").containsSubsequence("b:1", "b:2")
                .contains("x", "y");
        assertThat(s.settlement.summary()).hasSize(7).allMatch(l -> l.endsWith("ACCEPTED/PROCESSED"));
    }

    @Test
    void aTransientFailureIsRetriedInPlaceWhileItsKeysLaterDeliveriesWait() {
        Stages s = ordered(4, 100);
        failOnce.add("a:1");
        queued("a:1", "a:2", "b:1");
        List<Delivery> a1 = s.nextWork(slot);

        s.pipeline.run(a1.get(0));
        s.schedule.done(a1);

        assertThat(a1.get(0).state()).as("held for its back-off, not settled").isEqualTo(Delivery.State.HELD);
        assertThat(s.log).contains("release [orders|s:a:1]");
        List<Delivery> b1 = poll(s);
        assertThat(id(b1)).isEqualTo("b:1");
        assertThat(poll(s)).as("a:2 waits behind a:1's retry").isNull();

        s.advance(Duration.ofMillis(100)); // the back-off is over: a:1 runs again, ahead of a:2
        List<Delivery> again = poll(s);
        assertThat(id(again)).isEqualTo("a:1");
        s.pipeline.run(again.get(0));
        s.schedule.done(again);
        List<Delivery> a2 = poll(s);
        assertThat(id(a2)).isEqualTo("a:2");
        s.pipeline.run(a2.get(0));

        assertThat(handled).containsExactly("a:1", "a:1", "a:2");
        assertThat(s.settlement.summary()).containsExactly("a:1 ACCEPTED/PROCESSED", "a:2 ACCEPTED/PROCESSED");
        assertThat(s.log).containsSubsequence("acquireAll [orders|s:a:1, orders|s:a:2, orders|s:b:1]",
                "release [orders|s:a:1]", "acquire [orders|s:a:1]", "confirm [orders|s:a:1]");
        assertThat(s.memory.attempts(s.key("a:1"))).as("the store counted both attempts").isEqualTo(2);
    }

    /**
     * The retry's back-off ends on the scheduler's thread while the thread that ran the first attempt has not yet
     * reported it done: the delivery is already made ready to run again ({@link Delivery#again}) when {@code done}
     * comes. That report must not free the key, or the key's next delivery would run beside the retry.
     */
    @Test
    void aRetryDueBeforeItsFirstRunIsReportedDoneKeepsItsKey() {
        Stages s = ordered(4, 100);
        failOnce.add("a:1");
        queued("a:1", "a:2");
        List<Delivery> a1 = s.nextWork(slot);
        s.pipeline.run(a1.get(0));
        assertThat(a1.get(0).state()).isEqualTo(Delivery.State.HELD);

        // what the hold does when its back-off is over, with the first run's done() arriving in between
        a1.get(0).again();
        s.schedule.done(a1);
        s.schedule.again(a1.get(0));

        List<Delivery> retry = poll(s);
        assertThat(id(retry)).isEqualTo("a:1");
        assertThat(poll(s)).as("a:2 waits for a:1's retry").isNull();
        s.pipeline.run(retry.get(0));
        s.schedule.done(retry);
        assertThat(id(poll(s))).isEqualTo("a:2");
        assertThat(poll(s)).isNull();
    }

    @Test
    void aPermanentFailureIsRejectedAndFreesItsKey() {
        Stages s = ordered(4, 100);
        queue.add(Deliveries.amqp(group(Deliveries.message("a:1", "poison"), "a")));
        queued("a:2");
        List<Delivery> a1 = s.nextWork(slot);

        s.pipeline.run(a1.get(0));
        s.schedule.done(a1);

        assertThat(s.settlement.summary()).containsExactly("a:1 REJECTED/PERMANENT");
        assertThat(id(poll(s))).isEqualTo("a:2");
    }

    @Test
    void aKeysDeliveriesBeyondItsBacklogGiveTheirPlaceBackAndTheIntakeStopsAtTheParkedLimit() {
        Stages s = ordered(2, 2);
        queued("a:1", "a:2", "a:3", "a:4", "b:1");
        Delivery a1 = s.next(slot);

        assertThat(s.slotsGivenBack).extracting(d -> Stages.id(d.key())).containsExactly("a:3", "a:4");
        assertThat(s.slotsGivenBack).allMatch(d -> d.parked);
        List<Delivery> b1 = poll(s);
        assertThat(id(b1)).isEqualTo("b:1");
        queued("c:1");
        synchronized (s.schedule.lock) {
            assertThat(s.schedule.mayTake()).as("two parked: the limit").isFalse();
        }

        s.schedule.done(List.of(a1)); // a1 handed out by next(): its own list, so this frees nothing
        synchronized (s.schedule.lock) {
            assertThat(s.schedule.waiting()).isEqualTo(3);
        }
        assertThat(s.schedule.drain()).extracting(d -> Stages.id(d.key())).containsExactlyInAnyOrder("a:2", "a:3",
                "a:4");
        synchronized (s.schedule.lock) {
            assertThat(s.schedule.mayTake()).as("drained: nothing parked").isTrue();
        }
    }

    @Test
    void theIntakeStopsWhileParkedDeliveriesWeighTheByteBoundAndResumesAsTheyRun() {
        String large = "x".repeat(10_000);
        // a:1 holds the key's one place; a:2..a:4 park, 10,000 bytes and more each: two weigh more than 20,000
        Stages s = ordered(1, 100, 20_000);
        for (int i = 1; i <= 4; i++) {
            queue.add(Deliveries.amqp(group(Deliveries.message("a:" + i, large), "a")));
        }
        List<Delivery> a1 = s.nextWork(slot);

        assertThat(s.slotsGivenBack).extracting(d -> Stages.id(d.key())).containsExactly("a:2", "a:3", "a:4");
        assertThat(s.slotsGivenBack).allSatisfy(d -> assertThat(KeyOrder.weight(d))
                .as("its encoded size (the body and the rest of the message) plus the overhead")
                .isBetween(10_000L + Subscription.PARKED_DELIVERY_OVERHEAD,
                        10_200L + Subscription.PARKED_DELIVERY_OVERHEAD));
        queued("b:1");
        assertThat(mayTake(s)).as("three parked, far below the count, but over 20,000 bytes").isFalse();

        s.pipeline.run(a1.get(0));
        s.schedule.done(a1);
        List<Delivery> a2 = poll(s);
        assertThat(id(a2)).isEqualTo("a:2");
        assertThat(mayTake(s)).as("a:3 and a:4 still weigh more than 20,000 bytes").isFalse();
        s.pipeline.run(a2.get(0));
        s.schedule.done(a2);
        List<Delivery> a3 = poll(s);
        assertThat(id(a3)).isEqualTo("a:3");
        assertThat(mayTake(s)).as("a:4 alone weighs less: the intake takes again").isTrue();

        s.pipeline.run(a3.get(0));
        s.schedule.done(a3);
        assertThat(id(s.nextWork(slot))).isEqualTo("a:4");
        assertThat(id(s.nextWork(slot))).as("b:1, taken now, runs beside a:4").isEqualTo("b:1");
        assertThat(handled).containsExactly("a:1", "a:2", "a:3");
    }

    @Test
    void withBoundsOfZeroTheIntakeTakesWhileNothingIsParkedAndStopsOnceSomethingIs() {
        Stages s = ordered(1, 0, 0);
        assertThat(mayTake(s)).as("nothing parked: nothing to wait for").isTrue();
        queued("a:1", "a:2");
        List<Delivery> a1 = s.nextWork(slot);

        assertThat(s.slotsGivenBack).extracting(d -> Stages.id(d.key())).containsExactly("a:2");
        assertThat(mayTake(s)).isFalse();
        s.pipeline.run(a1.get(0));
        s.schedule.done(a1);
        List<Delivery> a2 = poll(s);
        assertThat(id(a2)).isEqualTo("a:2");
        assertThat(mayTake(s)).isTrue();
    }

    private static boolean mayTake(Stages s) {
        synchronized (s.schedule.lock) {
            return s.schedule.mayTake();
        }
    }

    private static Message<String> group(Message<String> m, String group) {
        try {
            return m.groupId(group);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
