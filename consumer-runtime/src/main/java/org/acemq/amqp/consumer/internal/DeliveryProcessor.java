package org.acemq.amqp.consumer.internal;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.DoubleSupplier;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.RejectionHandler;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The path of a delivery, for every acknowledgement mode, in two parts. {@link #admit} (the intake, for a batch of
 * deliveries taken from the client together): read each one (decode, key), claim the keys with one store call
 * ({@link StoreClaims}), settle what is decided without running anything. {@link #run} (a handler thread, for one
 * delivery): run the handler, end the claim ({@link Completions}: confirm before {@code accepted}, release before
 * anything else, batched with the other threads'), settle. {@link OutcomePolicy} decides at each step; the
 * {@link Settlement} of the subscription's mode sends what it decided.
 */
final class DeliveryProcessor {

    private static final Logger LOG = LoggerFactory.getLogger(DeliveryProcessor.class);

    private final Subscription spec;
    private final String name;
    private final ConsumerRuntime runtime;
    private final OutcomePolicy policy;
    private final Settlement settlement;
    private final Holds holds;
    private final SafeObserver observer;
    private final BooleanSupplier stopping;
    private final DoubleSupplier jitter;
    private final long beatNanos;
    private final boolean atMostOnce;
    private final Completions completions;
    private final StoreClaims claims;
    private final Keys keys;
    /** A moving average of the handler's run time (ticker nanoseconds), for the intake's claim-ahead bound. */
    private volatile long handlerNanos;

    DeliveryProcessor(Subscription spec, ConsumerRuntime runtime, OutcomePolicy policy, Settlement settlement,
                      Holds holds, BooleanSupplier stopping, DoubleSupplier jitter, long beatNanos, Keys keys) {
        this.spec = spec;
        this.name = spec.name();
        this.runtime = runtime;
        this.policy = policy;
        this.settlement = settlement;
        this.holds = holds;
        this.observer = runtime.observer();
        this.stopping = stopping;
        this.jitter = jitter;
        this.beatNanos = spec.renewLeases() ? beatNanos : 0;
        this.atMostOnce = spec.acknowledgementMode() == AcknowledgementMode.AT_MOST_ONCE;
        this.completions = new Completions(name, runtime, policy, this);
        this.claims = new StoreClaims(name, runtime, this.beatNanos, keys);
        this.keys = keys;
    }

    /** The whole path for a delivery taken alone (those left in the client at shutdown). */
    void process(Delivery d) {
        List<Delivery> run = admit(List.of(d));
        for (Delivery r : run) {
            run(r);
        }
    }

    // ------------------------------------------------------------------ intake

    /**
     * Reads each delivery, claims the keys of those the policy sends to the store (one store call for all of them),
     * and settles those decided already: bad input, duplicates, in-progress copies, poison, a store that is down. A
     * key that appears twice in the batch is claimed once here; its later copy is claimed when a thread starts it, so
     * that at concurrency 1 it finds the first copy confirmed (a duplicate), as it would have one at a time.
     *
     * @param batch deliveries in the order received
     * @return the deliveries whose handlers are to run, in the order received
     */
    List<Delivery> admit(List<Delivery> batch) {
        int n = batch.size();
        List<Delivery> toClaim = new ArrayList<>(n);
        Set<String> keys = n > 1 ? new HashSet<>(n * 2) : null;
        List<Delivery> run = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            Delivery d = batch.get(i);
            try {
                d.facts = read(d);
                Verdict v = decide(d, d.facts);
                if (v.action() != Verdict.Action.CLAIM) {
                    log(d, v);
                    settle(d, v);
                } else if (keys != null && !keys.add(d.key)) {
                    d.claimAtStart = true;
                } else {
                    toClaim.add(d);
                }
            } catch (RuntimeException | Error e) {
                failed(d, e);
            }
        }
        if (!toClaim.isEmpty()) {
            try {
                claims.claim(toClaim);
            } catch (RuntimeException | Error e) {
                for (Delivery d : toClaim) {
                    failed(d, e);
                }
            }
        }
        boolean release = false;
        for (int i = 0; i < n; i++) {
            Delivery d = batch.get(i);
            if (d.claimAtStart) {
                run.add(d);
                continue;
            }
            if (d.facts == null || d.facts.stage() != DeliveryFacts.Stage.CLAIMED) {
                continue; // settled above
            }
            try {
                Verdict v = decide(d, d.facts);
                if (v.action() == Verdict.Action.RUN) {
                    run.add(d);
                } else {
                    log(d, v);
                    release |= end(d, v, false);
                }
            } catch (RuntimeException | Error e) {
                failed(d, e);
            }
        }
        if (release) {
            completions.drive();
        }
        return run;
    }

    /**
     * The policy's verdict on the delivery's facts; a rejection is first put to the subscription's
     * {@link RejectionHandler}, if it has one, and the policy says what its answer makes of it.
     */
    private Verdict decide(Delivery d, DeliveryFacts facts) {
        Verdict v = policy.decide(facts);
        return policy.consults(v) ? policy.afterRejectionHandler(v, consultRejectionHandler(d, v, facts)) : v;
    }

    /** @return the rejection handler's answer; null if it threw or answered nothing (logged) */
    private RejectionHandler.Decision consultRejectionHandler(Delivery d, Verdict v, DeliveryFacts facts) {
        RejectionHandler handler = spec.rejectionHandler().orElseThrow();
        RejectionHandler.Decision decision;
        try {
            decision = handler.onRejection(new RejectionHandler.Rejection(name, v.reason(), v.condition(),
                    v.description(), d.envelope, facts.failure()));
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable t) {
            LOG.error("Subscription '{}': the rejection handler failed on {} ({}); it is rejected as decided ({})",
                    name, d.logId(), v.reason().name().toLowerCase(java.util.Locale.ROOT), v.condition(), t);
            return null;
        } finally {
            Thread.interrupted(); // as after the message handler: an interrupt meant for it must not reach receive()
        }
        if (decision == null) {
            LOG.error("Subscription '{}': the rejection handler answered null on {} ({}); it is rejected as decided "
                    + "({})", name, d.logId(), v.reason().name().toLowerCase(java.util.Locale.ROOT), v.condition());
        } else if (decision == RejectionHandler.Decision.ACCEPT) {
            LOG.info("Subscription '{}': the rejection handler took {} over ({}: {}); it is accepted", name, d.logId(),
                    v.reason().name().toLowerCase(java.util.Locale.ROOT), v.condition());
        }
        return decision;
    }

    /** Decodes the message and finds its key: the facts of a delivery just received. */
    private DeliveryFacts read(Delivery d) {
        String decodeError = null;
        try {
            Message<?> message = d.amqp.message();
            d.message = message;
            EnvelopeImpl envelope = EnvelopeImpl.of(null, spec.address(), message, 0);
            d.key = keys.key(message, envelope);
            if (d.key != null) {
                envelope.id(d.key);
                d.envelope = envelope;
                d.fingerprint = keys.fingerprint(message);
            }
        } catch (ClientException | RuntimeException e) {
            decodeError = Errors.describe(e);
            LOG.warn("Subscription '{}': a delivery cannot be decoded: {}", name, decodeError);
        }
        return DeliveryFacts.received(stopping.getAsBoolean(), decodeError, d.key != null, runtime.gate().paused());
    }

    // ------------------------------------------------------------------ handler thread

    /**
     * Runs an admitted delivery: decides again with what changed while it waited (the consumer closing, its link gone:
     * then its claim is released and the handler does not run), runs the handler, and hands the verdict to
     * {@link Completions}, which ends the claim and settles it. The thread waits for that only when it must close an
     * observer scope or trace context with the outcome; otherwise it goes on to its next delivery at once.
     */
    void run(Delivery d) {
        Verdict verdict = null;
        boolean handedOver = false;
        try {
            d.claimAtStart = false;
            d.facts = d.facts.waited(stopping.getAsBoolean(), !d.live());
            verdict = decide(d, d.facts);
            if (verdict.action() == Verdict.Action.CLAIM) { // a key that was not claimed with its batch
                claims.claim(List.of(d));
                verdict = decide(d, d.facts.waited(stopping.getAsBoolean(), !d.live()));
            }
            if (verdict.action() == Verdict.Action.RUN) {
                d.facts = invoke(d);
                verdict = decide(d, d.facts);
            }
            log(d, verdict);
            handedOver = true;
            end(d, verdict, true);
        } catch (RuntimeException | Error e) {
            if (handedOver) {
                throw e;
            }
            verdict = failed(d, e);
        } finally {
            DeliveryScope scope = d.scope;
            if (scope != null) {
                d.scope = null;
                boolean settled = d.completed && d.sent && verdict != null;
                scope.close(settled ? verdict.outcome() : null, settled ? verdict.reason() : null);
            }
        }
    }

    /**
     * On the closing thread: {@link #run} for each admitted delivery no thread started, their claims ended together.
     * Stopping, none of them runs its handler unless the subscription is at-most-once.
     */
    void runAll(List<Delivery> ds) {
        boolean pushed = false;
        for (Delivery d : ds) {
            try {
                d.facts = d.facts.waited(stopping.getAsBoolean(), !d.live());
                Verdict v = decide(d, d.facts);
                if (!v.settles()) {
                    run(d);
                    continue;
                }
                log(d, v);
                pushed |= end(d, v, false);
            } catch (RuntimeException | Error e) {
                failed(d, e);
            }
        }
        if (pushed) {
            completions.drive();
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
        return d.facts.handled(failure, runtime.profile().modifiedSupported(), jitter.getAsDouble());
    }

    /**
     * Runs the handler with the message's trace context in the MDC (and inside the observer's scope). The scope stays
     * open until {@link #run} ends, so the runtime's own log lines about this delivery carry the trace ids too.
     */
    private Throwable invokeHandler(Delivery d) {
        d.scope = DeliveryScope.open(TraceContext.of(d.message), observer, name, d.envelope,
                runtime.profile().product());
        long start = runtime.ticker().read();
        Throwable failure = null;
        try {
            spec.handler().handle(d.envelope);
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
        long took = runtime.ticker().read() - start;
        long avg = handlerNanos;
        handlerNanos = avg + ((took - avg) >> 3);
        if (observer.active()) {
            observer.handled(name, took, failure == null);
        }
        return failure;
    }

    /** Calls {@code action} for each delivery whose claim waits to be confirmed or released (the lease heartbeat). */
    void forEachEnding(java.util.function.Consumer<Delivery> action) {
        completions.forEachEnding(action);
    }

    /** @return a moving average of the handler's run time in ticker nanoseconds; {@code initial} until one ran */
    long handlerNanos() {
        return handlerNanos;
    }

    void handlerNanos(long initial) {
        handlerNanos = initial;
    }

    /**
     * Ends the claim, if one is held, through {@link Completions} (batched with other threads'), then settles; without
     * a claim settles at once.
     *
     * @param drive whether to lead the store call now (else the caller drives {@link Completions} once for many)
     * @return whether the delivery was handed to {@link Completions} without driving
     */
    private boolean end(Delivery d, Verdict verdict, boolean drive) {
        if (d.claim == null) {
            d.completed(settle(d, verdict));
            return false;
        }
        d.verdict = verdict;
        if (beatNanos > 0) {
            // the lease is renewed until the claim's end is recorded, however long the confirm waits (not only while
            // the handler runs): a confirm queued behind a busy store must not find its lease lapsed
            d.nextBeatNanos = runtime.ticker().read() + beatNanos;
        }
        if (!drive) {
            completions.push(d);
            return true;
        }
        completions.submit(d, d.scope != null);
        return false;
    }

    /**
     * Whatever broke (a store bug, a linkage error), the delivery must still be settled as the policy says for that
     * ({@link OutcomePolicy#unexpectedFailure}) and free its slot; a claim it holds is released.
     *
     * @return the verdict it was settled with
     */
    private Verdict failed(Delivery d, Throwable e) {
        LOG.error("Subscription '{}': unexpected failure while processing a delivery; settling it as {}", name,
                policy.unexpectedFailure().outcome().name().toLowerCase(java.util.Locale.ROOT), e);
        Claim claim = d.claim;
        d.claim = null;
        d.claimedNanos = 0;
        d.claimAtStart = false;
        if (claim != null) {
            try {
                runtime.store().release(claim);
            } catch (RuntimeException re) {
                LOG.warn("Subscription '{}': could not release {} ({}); it frees when its lease expires", name,
                        LogSafe.id(claim.messageId()), Errors.describe(re));
            }
        }
        Verdict verdict = policy.unexpectedFailure();
        d.completed(settlement.settle(d, verdict));
        return verdict;
    }

    /**
     * Sends the verdict now, or holds the delivery first (unless the policy drops the hold: {@link
     * OutcomePolicy#whenSent}). @return whether it was sent, enlisted or scheduled
     */
    boolean settle(Delivery d, Verdict decided) {
        Verdict verdict = policy.whenSent(decided, stopping.getAsBoolean());
        if (!verdict.delay().isZero()) {
            holds.hold(d, verdict.delay(), () -> settlement.settle(d, verdict));
            return true;
        }
        return settlement.settle(d, verdict);
    }

    /** @return the policy that decides every outcome of this subscription */
    OutcomePolicy policy() {
        return policy;
    }

    private void log(Delivery d, Verdict v) {
        switch (v.reason()) {
            case POISON -> LOG.warn("Subscription '{}': rejecting {} as poison: {}", name, d.logId(), v.description());
            case INVALID_ID -> LOG.warn("Subscription '{}': rejecting {}: {}", name, d.logId(), v.description());
            case CONFLICT -> LOG.warn("Subscription '{}': message {} arrived with fingerprint {}, but the store holds"
                    + " its key with fingerprint {} (the same key with other content); its handler does not run, it is"
                    + " {}", name, d.logId(), LogSafe.id(d.fingerprint), LogSafe.id(d.recordedFingerprint),
                    v.outcome() == Outcome.REJECTED ? "rejected" : "settled as a copy of that key ("
                            + v.outcome().name().toLowerCase(java.util.Locale.ROOT) + ")");
            case FAILED, STORE_UNAVAILABLE -> {
                if (atMostOnce) {
                    LOG.warn("Subscription '{}' (at-most-once): message {} is lost ({})", name, d.logId(),
                            v.reason() == SettleReason.FAILED ? "its handler failed" : "the store is unreachable");
                }
            }
            default -> {
            }
        }
    }
}
