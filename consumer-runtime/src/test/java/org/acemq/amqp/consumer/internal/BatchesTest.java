package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Consumer;
import org.acemq.amqp.api.BatchItemsFailedException;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.PermanentMessageException;
import org.acemq.amqp.consumer.RetryBackoff;
import org.acemq.amqp.consumer.Subscription;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The batch processing mode on the test's thread: batches are handed out whole, or partial once the oldest waited the
 * batch time; the handler gets only claimed messages (duplicates and copies in progress elsewhere filtered first);
 * per-item failures fail those items only, and the rest are confirmed together.
 */
@Timeout(30)
class BatchesTest {

    private final LinkedBlockingQueue<org.apache.qpid.protonj2.client.Delivery> queue = new LinkedBlockingQueue<>();
    private final Deliveries deliveries = new Deliveries(queue);
    private final HandlerSlot slot = new HandlerSlot();
    private final List<List<String>> calls = new CopyOnWriteArrayList<>();
    private Consumer<List<Envelope>> behaviour = b -> { };

    private Stages batches(int size) {
        Subscription spec = Subscription.batchBuilder(Deliveries.ADDRESS, batch -> {
            calls.add(batch.stream().map(e -> String.valueOf(e.messageId())).toList());
            behaviour.accept(batch);
        }).batchSize(size).batchTime(Duration.ofMillis(50)).prefetch(20)
                .retryBackoff(RetryBackoff.none()).build();
        Stages s = new Stages(spec, Duration.ofSeconds(1), deliveries);
        s.handlerTime(1);
        return s;
    }

    private void queued(String... ids) {
        for (String id : ids) {
            queue.add(Deliveries.amqp(Deliveries.message(id, "body of " + id)));
        }
    }

    private static List<Delivery> poll(Stages s) {
        synchronized (s.schedule.lock) {
            return s.schedule.poll(s.time.read(), false);
        }
    }

    @Test
    void aWholeBatchIsHandedOutAtOnceAndAPartialOneWhenItsTimeIsUp() {
        Stages s = batches(3);
        queued("a", "b", "c", "d");
        List<Delivery> first = s.nextWork(slot);

        assertThat(first).extracting(d -> Stages.id(d.key())).containsExactly("a", "b", "c");
        assertThat(s.claimCalls()).as("claimed in one store call").isEqualTo(1);
        assertThat(poll(s)).as("d alone waits for its batch to fill").isNull();
        synchronized (s.schedule.lock) {
            assertThat(s.schedule.waitNanos(s.time.read())).isEqualTo(Duration.ofMillis(50).toNanos());
        }
        s.advance(Duration.ofMillis(50));
        assertThat(poll(s)).extracting(d -> Stages.id(d.key())).containsExactly("d");
    }

    @Test
    void theHandlerGetsOnlyClaimedMessagesAndTheirConfirmsGoTogether() {
        Stages s = batches(4);
        Claim done = s.memory.acquire(s.key("dup"));
        s.memory.confirm(done);
        s.memory.newPeer().acquire(s.key("busy"));
        queued("a", "dup", "busy", "b", "c", "d");
        List<Delivery> batch = s.nextWork(slot);

        s.pipeline.runBatch(batch);

        assertThat(calls).containsExactly(List.of("a", "b", "c", "d"));
        assertThat(s.log).contains("confirmAll [orders|s:a, orders|s:b, orders|s:c, orders|s:d]");
        assertThat(s.settlement.summary()).contains("dup ACCEPTED/DUPLICATE", "a ACCEPTED/PROCESSED",
                "d ACCEPTED/PROCESSED");
    }

    @Test
    void itemsTheHandlerNamesFailAsTheirCausesSayAndTheOthersAreConfirmed() {
        Stages s = batches(4);
        behaviour = b -> {
            throw new BatchItemsFailedException(Map.of(1, new IllegalStateException("test: try b again"),
                    3, new PermanentMessageException("test: d is bad")));
        };
        queued("a", "b", "c", "d");

        s.pipeline.runBatch(s.nextWork(slot));

        assertThat(s.settlement.summary()).containsExactlyInAnyOrder("a ACCEPTED/PROCESSED", "c ACCEPTED/PROCESSED",
                "b MODIFIED/FAILED", "d REJECTED/PERMANENT");
        assertThat(s.memory.isConfirmed(s.key("a"))).isTrue();
        assertThat(s.memory.isConfirmed(s.key("b"))).isFalse();
        assertThat(s.log).contains("confirmAll [orders|s:a, orders|s:c]", "releaseAll [orders|s:b, orders|s:d]");
    }

    @Test
    void anyOtherExceptionFailsTheWholeBatch() {
        Stages s = batches(2);
        behaviour = b -> {
            throw new IllegalStateException("test: the database is down");
        };
        queued("a", "b");

        s.pipeline.runBatch(s.nextWork(slot));

        assertThat(s.settlement.summary()).containsExactly("a MODIFIED/FAILED", "b MODIFIED/FAILED");
        assertThat(s.memory.isConfirmed(s.key("a"))).isFalse();
    }

    @Test
    void aBatchHandlerThatNamesAnItemOutsideItsBatchFailsTheWholeBatch() {
        Stages s = batches(2);
        behaviour = b -> {
            throw new BatchItemsFailedException(7, new IllegalStateException("test: which one?"));
        };
        queued("a", "b");

        s.pipeline.runBatch(s.nextWork(slot));

        assertThat(s.settlement.summary()).containsExactly("a MODIFIED/FAILED", "b MODIFIED/FAILED");
    }
}
