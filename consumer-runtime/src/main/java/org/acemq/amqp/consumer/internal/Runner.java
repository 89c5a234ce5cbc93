package org.acemq.amqp.consumer.internal;

import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.DoubleSupplier;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.consumer.Ticker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The run stage, on a handler thread, for one admitted delivery: decides again with what changed while it waited (the
 * subscription stopping, its link gone: then its claim is released and the handler does not run), claims it if it was
 * left to claim at start, runs the handler, and hands the verdict to the end stage ({@link Completions}). The thread
 * waits for the settlement only when it must close an observer scope or trace context with the outcome; otherwise it
 * goes on to its next delivery at once.
 */
final class Runner {

    private static final Logger LOG = LoggerFactory.getLogger(Runner.class);

    private final String name;
    private final MessageHandler handler;
    private final BooleanSupplier stopping;
    private final Verdicts verdicts;
    private final StoreClaims claims;
    private final Completions ending;
    private final Settler settler;
    private final SafeObserver observer;
    private final Ticker ticker;
    private final CurrentBroker broker;
    private final DoubleSupplier jitter;
    private final HandlerTimes times;

    /**
     * @param stopping whether the subscription is stopping
     * @param jitter draws the retry back-off's jitter, in [0, 1)
     * @param times where each handler's run time is recorded
     */
    Runner(String name, MessageHandler handler, BooleanSupplier stopping, Verdicts verdicts, StoreClaims claims,
           Completions ending, Settler settler, SafeObserver observer, Ticker ticker, CurrentBroker broker,
           DoubleSupplier jitter, HandlerTimes times) {
        this.name = name;
        this.handler = handler;
        this.stopping = stopping;
        this.verdicts = verdicts;
        this.claims = claims;
        this.ending = ending;
        this.settler = settler;
        this.observer = observer;
        this.ticker = ticker;
        this.broker = broker;
        this.jitter = jitter;
        this.times = times;
    }

    /** @param d an admitted delivery ({@link Delivery.State#ADMITTED}) */
    void run(Delivery d) {
        Verdict verdict = null;
        boolean handedOver = false;
        Delivery.State before = null;
        try {
            d.moveTo(Delivery.State.RUNNING);
            d.claimAtStart = false;
            d.facts = d.facts.waited(stopping.getAsBoolean(), !d.live());
            verdict = verdicts.decide(d, d.facts);
            if (verdict.action() == Verdict.Action.CLAIM) { // a key that was not claimed with its batch
                claims.claim(List.of(d));
                verdict = verdicts.decide(d, d.facts.waited(stopping.getAsBoolean(), !d.live()));
            }
            if (verdict.action() == Verdict.Action.RUN) {
                d.facts = invoke(d);
                verdict = verdicts.decide(d, d.facts);
            }
            verdicts.log(d, verdict);
            handedOver = true;
            before = d.state();
            ending.end(d, verdict, true);
        } catch (RuntimeException | Error e) {
            if (handedOver && d.state() != before) {
                throw e; // the end stage took it (another thread may be settling it): not ours to settle again
            }
            verdict = settler.failed(d, e);
        } finally {
            DeliveryScope scope = d.scope;
            if (scope != null) {
                d.scope = null;
                boolean settled = d.completed && d.sent && verdict != null;
                scope.close(settled ? verdict.outcome() : null, settled ? verdict.reason() : null);
            }
        }
    }

    /** Runs the handler (with the claim, or without one when the store is down and the policy is FAIL_OPEN). */
    private DeliveryFacts invoke(Delivery d) {
        if (d.claim == null) {
            observer.storeBypassed(name);
            d.envelope.attempt(1);
        }
        Throwable failure = invokeHandler(d);
        d.nextBeatNanos = 0;
        return d.facts.handled(failure, broker.profile().modifiedSupported(), jitter.getAsDouble());
    }

    /**
     * Runs the handler with the message's trace context in the MDC (and inside the observer's scope). The scope stays
     * open until {@link #run} ends, so the runtime's own log lines about this delivery carry the trace ids too.
     */
    private Throwable invokeHandler(Delivery d) {
        d.scope = DeliveryScope.open(TraceContext.of(d.message), observer, name, d.envelope,
                broker.profile().product());
        long start = ticker.read();
        Throwable failure = null;
        try {
            handler.handle(d.envelope);
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
            Thread.interrupted(); // an interrupt meant for the handler must not reach the next receive()
        }
        long took = ticker.read() - start;
        times.record(took);
        if (observer.active()) {
            observer.handled(name, took, failure == null);
        }
        return failure;
    }
}
