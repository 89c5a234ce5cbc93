package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BooleanSupplier;
import java.util.function.DoubleSupplier;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.ClaimStatus;
import org.acemq.amqp.consumer.MissingIdPolicy;
import org.acemq.amqp.consumer.Outcome;
import org.acemq.amqp.consumer.SettleReason;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.internal.DeliveryFacts.StoreAnswer;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The path of one delivery, for every acknowledgement mode, top to bottom in {@link #process}: read it (decode, key),
 * claim its key, run the handler, confirm or release the claim, settle. {@link OutcomePolicy} decides at each step;
 * the {@link Settlement} of the subscription's mode sends what it decided. Runs on the handler thread that took the
 * delivery.
 *
 * <p>Each step works on one delivery; the claim and confirm steps are where a batch of waiting deliveries can later be
 * handed to the store at once ({@code acquireAll}, {@code confirmAll}).
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

    DeliveryProcessor(Subscription spec, ConsumerRuntime runtime, OutcomePolicy policy, Settlement settlement,
                      Holds holds, BooleanSupplier stopping, DoubleSupplier jitter, long beatNanos) {
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
    }

    /**
     * Decides and settles one delivery; every path frees its slot exactly once (the settlement does, when the outcome
     * is sent, abandoned, or its transaction ends). The observer's scope closes with the outcome sent or scheduled, or
     * with none when the delivery was abandoned (its link or connection is gone).
     */
    void process(Delivery d) {
        Verdict verdict = null;
        boolean settled = false;
        boolean sent = false;
        try {
            DeliveryFacts facts = read(d);
            verdict = policy.decide(facts);
            if (verdict.action() == Verdict.Action.CLAIM) {
                facts = claim(d, facts);
                verdict = policy.decide(facts);
            }
            if (verdict.action() == Verdict.Action.RUN) {
                facts = run(d, facts);
                verdict = policy.decide(facts);
            }
            log(d, verdict);
            endClaim(d, verdict);
            settled = true;
            sent = settle(d, verdict);
        } catch (RuntimeException | Error e) {
            // Whatever broke (a store bug, a linkage error), the delivery must still go back and free its slot.
            LOG.error("Subscription '{}': unexpected failure while processing a delivery; releasing it", name, e);
            releaseQuietly(d);
            verdict = Verdict.settle(Outcome.RELEASED, SettleReason.FAILED);
            if (!settled) {
                sent = settlement.settle(d, verdict);
            }
        } finally {
            DeliveryScope scope = d.scope;
            if (scope != null) {
                d.scope = null;
                scope.close(sent ? verdict.outcome() : null);
            }
        }
    }

    /** Decodes the message and finds its key: the facts of a delivery just received. */
    private DeliveryFacts read(Delivery d) {
        String decodeError = null;
        try {
            Message<?> message = d.amqp.message();
            d.message = message;
            d.key = keyFor(message);
            if (d.key != null) {
                d.envelope = EnvelopeImpl.of(d.key, spec.address(), message, 0);
            }
        } catch (ClientException | RuntimeException e) {
            decodeError = Errors.describe(e);
            LOG.warn("Subscription '{}': a delivery cannot be decoded: {}", name, decodeError);
        }
        return DeliveryFacts.received(stopping.getAsBoolean(), decodeError, d.key != null, runtime.gate().paused());
    }

    private String keyFor(Message<?> message) throws ClientException {
        String key = MessageKeys.fromMessageId(message.messageId());
        if (key != null) {
            return key;
        }
        MissingIdPolicy missing = spec.missingIdPolicy();
        return switch (missing.kind()) {
            case APPLICATION_PROPERTY -> MessageKeys.fromProperty(missing.property(),
                    message.property(missing.property()));
            case BODY_HASH -> MessageKeys.fromBodyBytes(BodyBytes.of(message));
            case REJECT -> null;
        };
    }

    /** Asks the store for the key: the facts plus its answer. A refused key is this message's fact, not an outage. */
    private DeliveryFacts claim(Delivery d, DeliveryFacts facts) {
        Claim claim;
        try {
            claim = runtime.store().acquire(d.key);
        } catch (InvalidMessageIdException e) {
            runtime.gate().success();
            observer.claim(name, ClaimStatus.ERROR);
            return facts.claimed(StoreAnswer.REFUSED_KEY, 0, Errors.describe(e));
        } catch (RuntimeException e) {
            observer.claim(name, ClaimStatus.ERROR);
            runtime.gate().failure(e);
            return facts.claimed(StoreAnswer.DOWN, 0, Errors.describe(e));
        }
        runtime.gate().success();
        StoreAnswer answer = switch (claim.result()) {
            case CLAIMED -> StoreAnswer.CLAIMED;
            case ALREADY_CONFIRMED -> StoreAnswer.ALREADY_CONFIRMED;
            case IN_PROGRESS -> StoreAnswer.IN_PROGRESS;
        };
        observer.claim(name, switch (answer) {
            case CLAIMED -> ClaimStatus.CLAIMED;
            case ALREADY_CONFIRMED -> ClaimStatus.ALREADY_CONFIRMED;
            default -> ClaimStatus.IN_PROGRESS;
        });
        if (claim.claimed()) {
            d.claim = claim;
            d.claimedNanos = runtime.ticker().read();
            d.envelope.attempt(claim.attempt());
        }
        return facts.claimed(answer, claim.attempt(), null);
    }

    /** Runs the handler (with the claim, or without one when the store is down and the policy is FAIL_OPEN). */
    private DeliveryFacts run(Delivery d, DeliveryFacts facts) {
        if (d.claim == null) {
            observer.storeBypassed(name);
            d.envelope.attempt(1);
        } else if (beatNanos > 0) {
            d.nextBeatNanos = runtime.ticker().read() + beatNanos;
        }
        Throwable failure = invokeHandler(d);
        d.nextBeatNanos = 0;
        return facts.handled(failure, runtime.profile().modifiedSupported(), jitter.getAsDouble());
    }

    /**
     * Runs the handler with the message's trace context in the MDC (and inside the observer's scope). The scope stays
     * open until {@link #process} ends, so the runtime's own log lines about this delivery carry the trace ids too.
     */
    private Throwable invokeHandler(Delivery d) {
        d.scope = DeliveryScope.open(TraceContext.of(d.message), observer, name, spec.address(),
                d.envelope.applicationProperties());
        boolean timed = observer.active();
        long start = timed ? runtime.ticker().read() : 0;
        try {
            spec.handler().handle(d.envelope);
            if (timed) {
                observer.handled(name, runtime.ticker().read() - start, true);
            }
            return null;
        } catch (Throwable t) {
            if (timed) {
                observer.handled(name, runtime.ticker().read() - start, false);
            }
            if (d.scope != null) {
                d.scope.failed(t);
            }
            if (t instanceof VirtualMachineError vme && !(t instanceof StackOverflowError)) {
                LOG.error("Subscription '{}': handler threw {}", name, vme.toString());
            } else {
                LOG.debug("Subscription '{}': handler failed on {}", name, d.logId(), t);
            }
            return t;
        } finally {
            Thread.interrupted(); // an interrupt meant for the handler must not reach the next receive()
        }
    }

    /** The claim is confirmed before {@code accepted} is sent, and released before any other outcome is. */
    private void endClaim(Delivery d, Verdict verdict) {
        Claim claim = d.claim;
        if (claim == null) {
            return;
        }
        d.claim = null;
        if (verdict.outcome() == Outcome.ACCEPTED && verdict.reason() == SettleReason.PROCESSED) {
            confirm(claim);
        } else {
            release(claim);
        }
        d.claimedNanos = 0;
    }

    /**
     * Records completion, retrying with back-off while the store fails. The delivery is still unsettled, so the broker
     * gives it to nobody else meanwhile; a store that answers within the confirm timeout loses nothing. Only then is it
     * accepted unconfirmed: the work is done, and returning it would make it run again for sure.
     */
    private void confirm(Claim claim) {
        long deadline = runtime.ticker().read() + runtime.config().confirmTimeout().toNanos();
        long pauseMillis = 20;
        for (int attempt = 1; ; attempt++) {
            try {
                if (!runtime.store().confirm(claim)) {
                    LOG.warn("Subscription '{}': {} was confirmed after its lease had been taken over", name,
                            LogSafe.id(claim.messageId()));
                }
                runtime.gate().success();
                if (attempt > 1) {
                    LOG.info("Subscription '{}': {} confirmed after {} attempts", name, LogSafe.id(claim.messageId()),
                            attempt);
                }
                return;
            } catch (RuntimeException e) {
                if (attempt == 1) {
                    runtime.gate().failure(e);
                }
                if (runtime.ticker().read() + Duration.ofMillis(pauseMillis).toNanos() - deadline >= 0) {
                    LOG.error("Subscription '{}': handler succeeded but the store could not record {} within {}; "
                            + "accepting it anyway (a later duplicate of it may run again): {}", name,
                            LogSafe.id(claim.messageId()), runtime.config().confirmTimeout(), Errors.describe(e));
                    return;
                }
                pause(Duration.ofMillis(pauseMillis));
                pauseMillis = Math.min(pauseMillis * 2, 1_000);
            }
        }
    }

    /** Waits on the consumer's scheduler (so that tests can move time), without holding anything. */
    private void pause(Duration delay) {
        CountDownLatch woken = new CountDownLatch(1);
        try {
            runtime.scheduler().schedule(woken::countDown, delay);
            woken.await();
        } catch (RejectedExecutionException e) {
            // shutting down: retry at once
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void release(Claim claim) {
        try {
            runtime.store().release(claim);
        } catch (RuntimeException e) {
            // The lease lapses on its own; until then copies are IN_PROGRESS and held back, never lost.
            LOG.warn("Subscription '{}': could not release {} ({}); it frees when its lease expires", name,
                    LogSafe.id(claim.messageId()), Errors.describe(e));
            runtime.gate().failure(e);
        }
    }

    private void releaseQuietly(Delivery d) {
        Claim claim = d.claim;
        d.claim = null;
        d.claimedNanos = 0;
        if (claim != null) {
            release(claim);
        }
    }

    /** Sends the verdict now, or holds the delivery first. @return whether it was sent, enlisted or scheduled */
    private boolean settle(Delivery d, Verdict verdict) {
        if (!verdict.delay().isZero() && !stopping.getAsBoolean()) {
            holds.hold(d, verdict.delay(), () -> settlement.settle(d, verdict));
            return true;
        }
        return settlement.settle(d, verdict);
    }

    private void log(Delivery d, Verdict v) {
        switch (v.reason()) {
            case POISON -> LOG.warn("Subscription '{}': rejecting {} as poison: {}", name, d.logId(), v.description());
            case INVALID_ID -> LOG.warn("Subscription '{}': rejecting {}: {}", name, d.logId(), v.description());
            case FAILED, STORE_UNAVAILABLE -> {
                if (spec.acknowledgementMode() == AcknowledgementMode.AT_MOST_ONCE) {
                    LOG.warn("Subscription '{}' (at-most-once): message {} is lost ({})", name, d.logId(),
                            v.reason() == SettleReason.FAILED ? "its handler failed" : "the store is unreachable");
                }
            }
            default -> {
            }
        }
    }
}
