package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.consumer.ConsumerObserver;
import org.acemq.amqp.consumer.testing.FaultInjectingStore;
import org.acemq.amqp.consumer.testing.ManualTime;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.Scheduler;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.StoreFailurePolicy;
import org.acemq.amqp.consumer.StoreOperation;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.client.Message;

/**
 * One subscription's stages wired as {@link Pipeline} wires them, with real collaborators (the subscription's
 * {@link OutcomePolicy}, an in-memory store behind {@link StoreAccess} and a {@link StoreGate}) and test doubles only
 * at the edges: time is a {@link ManualTime}, the settlement records what it is asked to send, the store is the
 * published {@link FaultInjectingStore} over a real {@link InMemoryIdempotencyStore} (it records its calls and fails
 * on demand). Store calls ({@code "acquireAll [k1, k2]"}) and settlements ({@code "settle [key] OUTCOME/REASON"}) are
 * written into one {@link #log}, so a test sees store calls and dispositions in one order.
 */
final class Stages {

    /** What the recording settlement was asked to send. */
    record Sent(String key, Outcome outcome, SettleReason reason, Delivery.State state, boolean confirmedInStore,
                long time, Delivery delivery) {
    }

    /** A {@link Settlement} that records each verdict (and whether the store held the key confirmed by then). */
    final class RecordingSettlement implements Settlement {
        final List<Sent> sent = new CopyOnWriteArrayList<>();
        /** Whether settle reports the delivery abandoned (its link gone) instead of sent. */
        volatile boolean abandon;

        @Override
        public boolean settle(Delivery d, Verdict v) {
            boolean confirmed = d.key() != null && memory.isConfirmed(d.key());
            sent.add(new Sent(d.key(), v.outcome(), v.reason(), d.state(), confirmed, time.read(), d));
            log.add("settle [" + d.key() + "] " + v.outcome() + "/" + v.reason());
            return !abandon;
        }

        /** @return "KEY OUTCOME/REASON" for each verdict sent, in order (keys as the message-ids, unscoped) */
        List<String> summary() {
            List<String> s = new ArrayList<>();
            for (Sent x : sent) {
                s.add(id(x.key()) + " " + x.outcome() + "/" + x.reason());
            }
            return s;
        }
    }

    /** The scheduler {@link Endings} waits on between confirm attempts: the manual time's, with each delay asked for recorded. */
    final class RecordingScheduler implements Scheduler {
        final List<Duration> delays = new CopyOnWriteArrayList<>();
        /** The consumer is closed: every schedule is refused, as a shut-down executor does. */
        volatile boolean closed;

        @Override
        public Future<?> schedule(Runnable task, Duration delay) {
            if (closed) {
                throw new java.util.concurrent.RejectedExecutionException("closed");
            }
            Future<?> f = time.schedule(task, delay);
            delays.add(delay);
            return f;
        }
    }

    final ManualTime time = new ManualTime();
    final Subscription spec;
    final OutcomePolicy policy;
    /** The real store behind {@link #store}: what it holds, read and written without going through the faults. */
    final InMemoryIdempotencyStore memory = InMemoryIdempotencyStore.builder().build();
    final FaultInjectingStore store = new FaultInjectingStore(memory);
    /** Each store call ({@code "acquireAll [k1, k2]"}, {@code "confirm [k]"}, ...) and each settlement, in order. */
    final List<String> log = new CopyOnWriteArrayList<>();
    /** The ticker's time of each confirm or confirmAll call, failed or not. */
    final List<Long> confirmTimes = new CopyOnWriteArrayList<>();
    final StoreAccess access;
    final AtomicInteger pauses = new AtomicInteger();
    final StoreGate gate;
    final AtomicBoolean stopping = new AtomicBoolean();
    final RecordingSettlement settlement = new RecordingSettlement();
    final Holds holds = new Holds(time);
    final RecordingScheduler endsScheduler = new RecordingScheduler();
    final Endings endings;
    final Keys keys;
    final StoreClaims claims;
    final Reader reader;
    final Verdicts verdicts;
    final CurrentBroker broker = new CurrentBroker();
    final HandlerTimes times = new HandlerTimes(Intake.HORIZON.toNanos());
    final Runner runner;
    final Deliveries deliveries;
    final FakeSource source;
    /** What the handlers sent, as the send stage handed it out; {@link #sendFailure} makes the next send fail. */
    final List<Outbound> sent = new CopyOnWriteArrayList<>();
    volatile SendFailedException sendFailure;
    final Sends sends;
    /** The deliveries an ordered schedule parked, giving their place in the window back. */
    final List<Delivery> slotsGivenBack = new CopyOnWriteArrayList<>();
    final Schedule schedule;
    Intake intake;
    Pipeline pipeline;

    Stages(Subscription spec) {
        this(spec, Duration.ofSeconds(1), new Deliveries());
    }

    /**
     * @param confirmTimeout how long a confirm is retried while the store fails
     * @param deliveries where the deliveries come from
     */
    Stages(Subscription spec, Duration confirmTimeout, Deliveries deliveries) {
        this.spec = spec;
        this.deliveries = deliveries;
        String name = spec.name();
        store.onCall(call -> {
            log.add(call.toString());
            if (call.operation() == StoreOperation.CONFIRM) {
                confirmTimes.add(time.read());
            }
        });
        SafeObserver observer = new SafeObserver(ConsumerObserver.NOOP);
        this.policy = new OutcomePolicy(spec, StoreFailurePolicy.FAIL_CLOSED);
        this.access = new StoreAccess(store, observer, time);
        this.gate = new StoreGate(access, StoreFailurePolicy.FAIL_CLOSED, ConsumerObserver.NOOP, time,
                Duration.ofSeconds(1), Duration.ofSeconds(30), pauses::incrementAndGet, () -> { });
        this.source = new FakeSource(deliveries.link);
        if (spec.orderBy().isPresent()) {
            this.schedule = new KeyOrder(source::stopping, time, spec.keyBacklog(), spec.parkedLimit(),
                    spec.parkedBytes(), slotsGivenBack::add);
        } else if (spec.batchHandler().isPresent()) {
            this.schedule = new Batches(source::stopping, time, spec.batchSize(), spec.batchTime().toNanos());
        } else {
            this.schedule = new ArrivalOrder(source::stopping, time);
        }
        this.endings = new Endings(name, policy, access, gate, settlement, holds, time, endsScheduler,
                confirmTimeout, stopping::get, 0, schedule::again);
        this.keys = new Keys(spec, null);
        this.claims = new StoreClaims(name, access, gate, observer, time, 0, keys.fingerprints());
        this.reader = new Reader(name, spec.address(), keys);
        this.verdicts = new Verdicts(spec, policy);
        this.runner = new Runner(name, spec.handler(), spec.batchHandler().orElse(null), observer, time, broker,
                () -> 0.0, times);
        this.sends = new Sends(name, (messages, path) -> {
            SendFailedException failure = sendFailure;
            if (failure != null) {
                return java.util.Collections.nCopies(messages.size(), failure);
            }
            sent.addAll(messages);
            log.add("send " + messages.stream().map(Outbound::address).toList());
            return java.util.Arrays.asList(new SendFailedException[messages.size()]);
        }, null);
        this.intake = new Intake(spec.concurrency(), spec.prefetch(), minimum(spec), source, times, time,
                Intake.HORIZON.toNanos());
        this.pipeline = new Pipeline(spec, policy, settlement, holds, null, schedule, intake, reader, claims, runner,
                sends, endings, gate, () -> stopping.get() || source.quiet(), () -> deliveries.link);
    }

    /**
     * Rewires the intake (and the pipeline around it) as if the handlers had run this long on average so far.
     *
     * @param averageNanos the handlers' average run time
     */
    void handlerTime(long averageNanos) {
        intake = new Intake(spec.concurrency(), spec.prefetch(), minimum(spec), source, new HandlerTimes(averageNanos),
                time,
                Intake.HORIZON.toNanos());
        pipeline = new Pipeline(spec, policy, settlement, holds, null, schedule, intake, reader, claims, runner,
                sends, endings, gate, () -> stopping.get() || source.quiet(), () -> deliveries.link);
    }

    /**
     * What a handler thread gets next, without running it: takes and admits a batch when nothing admitted waits (as
     * {@link Pipeline#step} does).
     *
     * @return the next admitted delivery, or null once the subscription stops and nothing is admitted
     */
    Delivery next(HandlerSlot slot) {
        List<Delivery> work = nextWork(slot);
        return work == null ? null : work.get(0);
    }

    /** @return as {@link #next}, the work as the schedule handed it out (the list that identifies the run) */
    List<Delivery> nextWork(HandlerSlot slot) {
        while (true) {
            List<Delivery> work = schedule.next();
            if (work == null || work != Schedule.LEAD) {
                return work;
            }
            pipeline.lead(slot);
        }
    }

    private static int minimum(Subscription spec) {
        return spec.batchHandler().isPresent() ? spec.batchSize() : 1;
    }

    /** @return a delivery of this message, read (as the read stage leaves it: {@link Delivery.State#RECEIVED}) */
    Delivery read(Message<?> message) {
        Delivery d = new Delivery(reader.read(deliveries.of(message)));
        d.facts = DeliveryFacts.received(stopping.get(), d.arrival.decodeError(), d.key() != null, gate.paused());
        return d;
    }

    /** @return a delivery of a message with this message-id and the body "body of id", read */
    Delivery read(String id) {
        return read(Deliveries.message(id, "body of " + id));
    }

    /** @return the logged store calls of the method {@code method} (e.g. "acquireAll"), in order */
    List<String> log(String method) {
        List<String> these = new ArrayList<>();
        for (String c : log) {
            if (c.startsWith(method + " ")) {
                these.add(c);
            }
        }
        return these;
    }

    /** @return how many claim calls (single or batch) the store got, as logged */
    int claimCalls() {
        return log("acquire").size() + log("acquireAll").size();
    }

    /** @return the store key of message-id {@code id} in this subscription's scope */
    String key(String id) {
        return spec.address() + "|s:" + id;
    }

    /** @return the message-id part of a store key (for readable assertions) */
    static String id(String key) {
        if (key == null) {
            return "null";
        }
        int bar = key.lastIndexOf("|s:");
        return bar < 0 ? key : key.substring(bar + 3);
    }

    /** @return deliveries of messages with these message-ids, admitted as one batch */
    List<Delivery> admitted(String... ids) {
        List<Arrival> batch = new ArrayList<>();
        for (String id : ids) {
            batch.add(deliveries.of(id));
        }
        return pipeline.admit(batch);
    }

    /** Moves the manual time on by {@code d}, running what falls due. */
    void advance(Duration d) {
        time.advance(d);
    }
}
