package org.acemq.amqp.consumer.internal;

import java.util.function.DoubleSupplier;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.acemq.amqp.api.BatchHandler;
import org.acemq.amqp.api.BatchItemsFailedException;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.Ticker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The run stage, on a handler thread: runs the application's handler for one delivery (with its claim, or without one
 * when the store is down and the policy is FAIL_OPEN), inside the message's trace context and the observer's scope,
 * times it, and states what happened as facts. It decides nothing.
 */
final class Runner {

    private static final Logger LOG = LoggerFactory.getLogger(Runner.class);

    private final String name;
    private final MessageHandler handler;
    private final BatchHandler batchHandler;
    private final SafeObserver observer;
    private final Ticker ticker;
    private final CurrentBroker broker;
    private final DoubleSupplier jitter;
    private final HandlerTimes times;

    /**
     * @param batchHandler the handler of a batch subscription, or null
     * @param jitter draws the retry back-off's jitter, in [0, 1)
     * @param times where each handler's run time is recorded
     */
    Runner(String name, MessageHandler handler, BatchHandler batchHandler, SafeObserver observer, Ticker ticker,
           CurrentBroker broker, DoubleSupplier jitter, HandlerTimes times) {
        this.name = name;
        this.handler = handler;
        this.batchHandler = batchHandler;
        this.observer = observer;
        this.ticker = ticker;
        this.broker = broker;
        this.jitter = jitter;
        this.times = times;
    }

    /**
     * Runs the handler. The observer's scope stays open in {@code d.scope} until the delivery's outcome is known, so
     * the runtime's own log lines about it carry the trace ids too; the pipeline closes it.
     *
     * @return the delivery's facts with the handler's result
     */
    DeliveryFacts run(Delivery d) {
        if (d.claim == null) {
            observer.storeBypassed(name);
            d.envelope().attempt(1);
        }
        TraceContext trace = TraceContext.of(d.arrival.message());
        d.scope = DeliveryScope.open(trace, observer, name, d.envelope(), broker.profile().product());
        long start = ticker.read();
        Throwable failure = null;
        d.envelope().open(trace);
        try {
            handler.handle(d.envelope());
        } catch (Throwable t) {
            failure = t;
            if (d.scope != null) {
                d.scope.failed(t);
            }
            if (t instanceof VirtualMachineError vme && !(t instanceof StackOverflowError)) {
                LOG.error("Subscription '{}': handler threw {}", name, vme.toString());
            } else {
                LOG.debug("Subscription '{}': handler failed on {}", name, d.logId(), t);
            }
        } finally {
            d.envelope().close();
            Thread.interrupted(); // an interrupt meant for the handler must not reach the next receive()
        }
        long took = ticker.read() - start;
        times.record(took);
        if (observer.active()) {
            observer.handled(name, took, failure == null);
        }
        d.nextBeatNanos = 0;
        return d.facts.handled(failure, broker.profile().modifiedSupported(), jitter.getAsDouble());
    }

    /** @return whether the subscription's handler takes batches */
    boolean batches() {
        return batchHandler != null;
    }

    /**
     * Runs the batch handler once for the batch (every delivery claimed, or run without a claim under FAIL_OPEN) and
     * sets each delivery's facts to its own result: the failure the handler named for it
     * ({@link BatchItemsFailedException}), the exception the whole call threw, or success. The handler's run time is
     * recorded once per call.
     */
    void runBatch(List<Delivery> batch) {
        List<Envelope> envelopes = new ArrayList<>(batch.size());
        for (Delivery d : batch) {
            if (d.claim == null) {
                observer.storeBypassed(name);
                d.envelope().attempt(1);
            }
            d.envelope().open(TraceContext.of(d.arrival.message()));
            envelopes.add(d.envelope());
        }
        long start = ticker.read();
        Throwable all = null;
        Map<Integer, Throwable> items = Map.of();
        try {
            batchHandler.handle(Collections.unmodifiableList(envelopes));
        } catch (BatchItemsFailedException e) {
            items = e.failures();
            for (Integer i : items.keySet()) {
                if (i >= batch.size()) {
                    all = new IllegalStateException("the batch handler named item " + i + " of a batch of "
                            + batch.size() + " as failed: every item is taken as failed", e);
                    items = Map.of();
                    break;
                }
            }
        } catch (Throwable t) {
            all = t;
            if (t instanceof VirtualMachineError vme && !(t instanceof StackOverflowError)) {
                LOG.error("Subscription '{}': batch handler threw {}", name, vme.toString());
            }
        } finally {
            for (Delivery d : batch) {
                d.envelope().close();
            }
            Thread.interrupted(); // an interrupt meant for the handler must not reach the next receive()
        }
        long took = ticker.read() - start;
        times.record(took / Math.max(1, batch.size()));
        if (observer.active()) {
            observer.handled(name, took, all == null && items.isEmpty());
        }
        if (all != null || !items.isEmpty()) {
            LOG.debug("Subscription '{}': batch handler failed on {} of {} item(s)", name,
                    all != null ? batch.size() : items.size(), batch.size(), all);
        }
        boolean modified = broker.profile().modifiedSupported();
        for (int i = 0; i < batch.size(); i++) {
            Delivery d = batch.get(i);
            d.nextBeatNanos = 0;
            Throwable failure = all != null ? all : items.get(i);
            d.facts = d.facts.handled(failure, modified, jitter.getAsDouble());
        }
    }
}
