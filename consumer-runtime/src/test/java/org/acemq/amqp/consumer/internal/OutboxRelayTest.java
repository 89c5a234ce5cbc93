package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.consumer.SendPath;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The outbox relay, with an outbox in memory and an outlet that accepts, fails or blocks as told: what handlers'
 * transactions committed goes out off the handler thread, several transactions' entries in one round with one mark;
 * what the broker does not take stays pending; a disconnected broker leaves entries untouched; a full queue makes the
 * poster wait and then leaves its entries to the sweep; close sends what waits.
 */
@Timeout(30)
class OutboxRelayTest {

    private final FakeOutbox outbox = new FakeOutbox(Clock.systemUTC(), Duration.ofSeconds(30));
    private final OutboxSweepTest.FakeOutlet outlet = new OutboxSweepTest.FakeOutlet();
    private final AtomicBoolean connected = new AtomicBoolean(true);
    private OutboxRelay relay;

    private OutboxRelay relay(Duration maxWait) {
        return relay(maxWait, Duration.ZERO);
    }

    private OutboxRelay relay(Duration maxWait, Duration markDelay) {
        relay = new OutboxRelay("orders-service", outbox, new OutboxDispatcher(outbox, outlet, null), connected::get,
                maxWait, markDelay);
        return relay;
    }

    @AfterEach
    void close() {
        if (relay != null) {
            relay.close(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        }
    }

    /** A committed transaction's entries and their messages, as the send stage has them. */
    private List<Outbound> committed(String key, int n, String address) {
        List<Outbound> list = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            list.add(Outbound.of(key, i, address, OutgoingMessage.of("body " + key + " #" + i), null, null));
        }
        outbox.add(list.stream().map(Outbound::entry).toArray(OutboxEntry[]::new));
        return list;
    }

    private boolean post(List<Outbound> messages) {
        return relay.post(messages.stream().map(Outbound::entry).toList(), messages, "Subscription 'orders'");
    }

    @Test
    void sendsWhatWasCommittedOffThePostingThreadAndMarksItDispatched() {
        relay(Duration.ofSeconds(5)).start();
        List<Outbound> a = committed("orders|s:a", 2, "events");

        assertThat(post(a)).isTrue();

        await().atMost(Duration.ofSeconds(10)).until(() -> outbox.dispatchedCount() == 2);
        assertThat(outlet.sent).containsExactly(a.get(0).messageId(), a.get(1).messageId());
        assertThat(outlet.paths).containsOnly(SendPath.OUTBOX);
    }

    @Test
    void entriesOfSeveralTransactionsThatWaitedGoOutInOneRoundWithOneMark() throws Exception {
        CountDownLatch inFirstRound = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        AtomicBoolean first = new AtomicBoolean(true);
        outlet.during = () -> {
            if (first.getAndSet(false)) {
                inFirstRound.countDown();
                try {
                    letGo.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        relay(Duration.ofSeconds(5)).start();
        post(committed("orders|s:first", 1, "events"));
        assertThat(inFirstRound.await(10, TimeUnit.SECONDS)).isTrue();
        for (int i = 0; i < 20; i++) {
            assertThat(post(committed("orders|s:k" + i, 1, "events"))).isTrue(); // queued behind the first round
        }
        letGo.countDown();

        await().atMost(Duration.ofSeconds(10)).until(() -> outbox.dispatchedCount() == 21);
        assertThat(outbox.calls).filteredOn(c -> c.startsWith("outboxDispatched"))
                .as("the first transaction's mark, then one mark for the 20 that waited")
                .containsExactly("outboxDispatched(1)", "outboxDispatched(20)");
    }

    @Test
    void acceptedEntriesWaitForTheirMarkDelaySoThatOneMarkServesSeveralRounds() {
        relay(Duration.ofSeconds(5), Duration.ofSeconds(60)).start();
        List<Outbound> a = committed("orders|s:a", 1, "events");
        List<Outbound> b = committed("orders|s:b", 2, "events");

        post(a);
        await().atMost(Duration.ofSeconds(10)).until(() -> outlet.sent.size() == 1);
        post(b);
        await().atMost(Duration.ofSeconds(10)).until(() -> outlet.sent.size() == 3);
        assertThat(outbox.calls).as("sent, not marked yet").noneMatch(c -> c.startsWith("outboxDispatched"));
        assertThat(outbox.dispatchedCount()).isZero();

        assertThat(relay.close(System.nanoTime() + TimeUnit.SECONDS.toNanos(10))).isTrue();

        assertThat(outbox.calls).as("marked at close, in one call").containsExactly("outboxDispatched(3)");
        assertThat(outbox.dispatchedCount()).isEqualTo(3);
    }

    @Test
    void marksAreWrittenOnceTheirDelayIsOverWithoutMoreWork() {
        relay(Duration.ofSeconds(5), Duration.ofMillis(100)).start();
        post(committed("orders|s:a", 2, "events"));

        await().atMost(Duration.ofSeconds(10)).until(() -> outbox.dispatchedCount() == 2);
        assertThat(outbox.calls).containsExactly("outboxDispatched(2)");
    }

    @Test
    void whatTheBrokerDoesNotTakeStaysPendingWithItsFailureRecorded() {
        outlet.failing.add("busy");
        relay(Duration.ofSeconds(5)).start();
        List<Outbound> ok = committed("orders|s:a", 1, "events");
        List<Outbound> notTaken = committed("orders|s:b", 1, "busy");

        post(ok);
        post(notTaken);

        await().atMost(Duration.ofSeconds(10)).until(() -> outbox.row(notTaken.get(0).messageId()).error != null);
        await().atMost(Duration.ofSeconds(10)).until(() -> outbox.dispatchedCount() == 1);
        assertThat(outbox.row(ok.get(0).messageId()).dispatched).isTrue();
        assertThat(outbox.row(notTaken.get(0).messageId()).dispatched).as("pending, for the sweep").isFalse();
        assertThat(outbox.row(notTaken.get(0).messageId()).error).contains("released");
    }

    @Test
    void whileTheBrokerIsDisconnectedEntriesAreLeftUntouchedForTheSweep() {
        connected.set(false);
        relay(Duration.ofSeconds(5)).start();
        List<Outbound> a = committed("orders|s:a", 1, "events");

        post(a);

        await().atMost(Duration.ofSeconds(10)).until(() -> relay.queued() == 0);
        relay.close(System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
        assertThat(outlet.sent).as("not tried").isEmpty();
        assertThat(outbox.calls).as("nothing recorded against it").isEmpty();
        assertThat(outbox.row(a.get(0).messageId()).dispatched).isFalse();
    }

    @Test
    void aFullQueueMakesThePosterWaitThenLeavesItsEntriesToTheSweep() throws Exception {
        CountDownLatch letGo = new CountDownLatch(1);
        CountDownLatch sending = new CountDownLatch(1);
        outlet.during = () -> {
            sending.countDown();
            try {
                letGo.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        relay(Duration.ofMillis(200)).start();
        post(committed("orders|s:first", 1, "events"));
        assertThat(sending.await(10, TimeUnit.SECONDS)).isTrue(); // the relay's thread is stuck in its first round
        assertThat(post(committed("orders|s:big", OutboxRelay.MAX_QUEUED, "events"))).isTrue();

        long began = System.nanoTime();
        List<Outbound> over = committed("orders|s:over", 1, "events");
        assertThat(post(over)).as("no room: left to the sweep").isFalse();
        assertThat(System.nanoTime() - began).as("waited for room first")
                .isGreaterThanOrEqualTo(Duration.ofMillis(200).toNanos());
        letGo.countDown();

        await().atMost(Duration.ofSeconds(20)).until(() -> outbox.dispatchedCount() == 1 + OutboxRelay.MAX_QUEUED);
        assertThat(outbox.row(over.get(0).messageId()).dispatched).as("pending in the outbox, not lost").isFalse();
    }

    @Test
    void closeSendsWhatWaitsThenTakesNoMore() throws Exception {
        CountDownLatch letGo = new CountDownLatch(1);
        CountDownLatch sending = new CountDownLatch(1);
        AtomicBoolean first = new AtomicBoolean(true);
        outlet.during = () -> {
            if (first.getAndSet(false)) {
                sending.countDown();
                try {
                    letGo.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        relay(Duration.ofSeconds(5)).start();
        post(committed("orders|s:first", 1, "events"));
        assertThat(sending.await(10, TimeUnit.SECONDS)).isTrue();
        post(committed("orders|s:second", 3, "events"));
        letGo.countDown();

        assertThat(relay.close(System.nanoTime() + TimeUnit.SECONDS.toNanos(10))).isTrue();

        assertThat(outbox.dispatchedCount()).as("everything queued went out before close returned").isEqualTo(4);
        List<Outbound> late = committed("orders|s:late", 1, "events");
        assertThat(post(late)).as("closed: left to the sweep").isFalse();
        assertThat(outbox.row(late.get(0).messageId()).dispatched).isFalse();
    }
}
