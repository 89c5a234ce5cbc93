package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.InvalidMessageIdException;
import org.acemq.amqp.consumer.Scheduler;
import org.acemq.amqp.consumer.Ticker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The end of a delivery's path: its claim is ended in the store (confirmed or released as
 * {@link OutcomePolicy#confirms} says), then it is settled with its verdict, now or after the verdict's delay, through
 * the subscription's {@link Settlement} strategy. Nothing is settled before its claim's end was recorded, or, for a
 * confirm, before {@code confirmTimeout} of retries ran out or the store refused the key; then the policy decides
 * what is sent ({@link OutcomePolicy#confirmNotRecorded}). It decides nothing else.
 *
 * <p><b>Many per store call, no thread of its own</b> (leader/follower): a thread that hands a delivery over pushes it
 * onto a lock-free stack; if no store call of this subscription is in flight it becomes the leader and ends every
 * claim waiting (others' too) with one {@code confirmAll} and one {@code releaseAll}, settles those deliveries, and
 * repeats while more arrived meanwhile. Otherwise it returns at once and its delivery goes with the leader's next
 * call. So a lone delivery costs exactly one store call, and a busy subscription one call per batch of whatever
 * finished during the previous call. A confirm is retried with back-off while the store fails, up to
 * {@code confirmTimeout}: the deliveries stay unsettled meanwhile, so the broker gives them to nobody else.
 *
 * <p>Also where a delivery whose processing failed unexpectedly ends ({@link #failed}).
 */
final class Endings {

    private static final Logger LOG = LoggerFactory.getLogger(Endings.class);
    /** The most deliveries of the pending stack the heartbeat walks (the stack may be taken while it walks it). */
    private static final int MAX_WALK = 10_000;

    private final String name;
    private final OutcomePolicy policy;
    private final StoreAccess store;
    private final StoreGate gate;
    private final Settlement settlement;
    private final Holds holds;
    private final Ticker ticker;
    private final Scheduler scheduler;
    private final Duration confirmTimeout;
    private final BooleanSupplier stopping;
    private final long beatNanos;
    private final Consumer<Delivery> retry;
    private final AtomicReference<Delivery> pending = new AtomicReference<>();
    private final AtomicBoolean busy = new AtomicBoolean();
    /**
     * The first of the batch the leader is ending now, linked in order through {@code nextPending}, for the lease
     * heartbeat (published only where leases are renewed): the deliveries it took off the stack are out of the
     * heartbeat's reach otherwise. No set, no copy, no per-delivery tracking.
     */
    private volatile Delivery inFlight;

    /**
     * @param scheduler where the back-off between confirm attempts waits (so that tests can move time)
     * @param stopping whether the subscription is stopping (a hold is then dropped)
     * @param beatNanos the lease renewal period, 0 if leases are not renewed
     * @param retry where a delivery retried in place goes once its back-off is over (the schedule)
     */
    Endings(String name, OutcomePolicy policy, StoreAccess store, StoreGate gate, Settlement settlement, Holds holds,
            Ticker ticker, Scheduler scheduler, Duration confirmTimeout, BooleanSupplier stopping, long beatNanos,
            Consumer<Delivery> retry) {
        this.name = name;
        this.policy = policy;
        this.store = store;
        this.gate = gate;
        this.settlement = settlement;
        this.holds = holds;
        this.ticker = ticker;
        this.scheduler = scheduler;
        this.confirmTimeout = confirmTimeout;
        this.stopping = stopping;
        this.beatNanos = beatNanos;
        this.retry = retry;
    }

    // ------------------------------------------------------------------ the end stage's entry

    /**
     * Ends the delivery's claim, if it holds one, here or batched with other threads' (then settles it); without a
     * claim settles it at once.
     *
     * @param verdict a SETTLE or RETRY verdict
     * @param drive whether to lead the store call now; false hands the delivery over only, and the caller calls
     *     {@link #drive()} once for many
     * @return whether the delivery was handed over without driving
     */
    boolean end(Delivery d, Verdict verdict, boolean drive) {
        if (d.claim == null) {
            if (!d.dispatched.isEmpty()) {
                markDispatched(d.dispatched);
            }
            completed(d, settle(d, verdict));
            return false;
        }
        d.moveTo(Delivery.State.ENDING);
        d.verdict = verdict;
        if (beatNanos > 0) {
            // the lease is renewed until the claim's end is recorded, however long the confirm waits (not only while
            // the handler runs): a confirm queued behind a busy store must not find its lease lapsed
            d.nextBeatNanos = ticker.read() + beatNanos;
        }
        if (!drive) {
            push(d);
            return true;
        }
        boolean await = d.scope != null;
        if (await) {
            d.awaited = true;
        }
        push(d);
        drive();
        if (await && !d.completed) {
            d.awaitCompleted();
        }
        return false;
    }

    /** Hands over a delivery without leading a store call now; {@link #drive()} must follow. */
    private void push(Delivery d) {
        Delivery head;
        do {
            head = pending.get();
            d.nextPending = head;
        } while (!pending.compareAndSet(head, d));
    }

    /** Ends the claims waiting, unless a store call is in flight already (its leader takes them next). */
    void drive() {
        while (pending.get() != null && busy.compareAndSet(false, true)) {
            try {
                Delivery stack = pending.getAndSet(null);
                if (stack != null) {
                    Delivery ordered = reverse(stack);
                    if (beatNanos > 0) {
                        inFlight = ordered;
                    }
                    complete(ordered);
                }
            } finally {
                if (beatNanos > 0) {
                    inFlight = null;
                }
                busy.set(false);
            }
        }
    }

    private static Delivery reverse(Delivery stack) {
        Delivery ordered = null;
        while (stack != null) {
            Delivery next = stack.nextPending;
            stack.nextPending = ordered;
            ordered = stack;
            stack = next;
        }
        return ordered;
    }

    /** Ends the claims of a batch (one confirm call, one release call), then settles each of its deliveries. */
    private void complete(Delivery first) {
        List<Claim> unrecorded;
        if (first.nextPending == null) {
            List<Claim> one = List.of(first.claim); // the lone delivery: no lists to fill
            if (endsAfterSettling(first) || confirmedByHandler(first)) {
                unrecorded = List.of();
            } else if (policy.confirms(first.verdict)) {
                unrecorded = confirm(one);
            } else {
                release(one);
                unrecorded = List.of();
            }
        } else {
            List<Claim> confirms = new ArrayList<>();
            List<Claim> releases = new ArrayList<>();
            for (Delivery d = first; d != null; d = d.nextPending) {
                if (!endsAfterSettling(d) && !confirmedByHandler(d)) {
                    (policy.confirms(d.verdict) ? confirms : releases).add(d.claim);
                }
            }
            if (!releases.isEmpty()) {
                release(releases);
            }
            unrecorded = confirms.isEmpty() ? List.of() : confirm(confirms);
        }
        markDispatched(first);
        Delivery d = first;
        while (d != null) {
            Delivery next = d.nextPending;
            d.nextPending = null;
            if (!unrecorded.isEmpty() && containsSame(unrecorded, d.claim)) {
                d.verdict = policy.confirmNotRecorded(d.verdict);
            }
            settleEnded(d);
            d = next;
        }
    }

    /** Marks what the batch's handlers sent from the outbox dispatched: one store call for the batch. */
    private void markDispatched(Delivery first) {
        List<org.acemq.amqp.api.OutboxEntry> all = null;
        for (Delivery d = first; d != null; d = d.nextPending) {
            if (!d.dispatched.isEmpty()) {
                if (all == null) {
                    all = new ArrayList<>();
                }
                all.addAll(d.dispatched);
            }
        }
        if (all != null) {
            markDispatched(all);
        }
    }

    private void markDispatched(List<org.acemq.amqp.api.OutboxEntry> entries) {
        org.acemq.amqp.api.OutboxStore outbox = store.outbox();
        if (outbox == null) {
            return; // written to the outbox of a store the consumer was not given: nothing of ours to mark
        }
        try {
            outbox.outboxDispatched(entries);
        } catch (RuntimeException e) {
            // they stay pending: the sweep sends them again, and the receivers absorb the copies by their ids
            LOG.warn("Subscription '{}': could not mark {} sent message(s) dispatched in the outbox ({}); the sweep "
                    + "sends them again", name, entries.size(), Errors.describe(e));
        }
    }

    private static boolean containsSame(List<Claim> claims, Claim claim) {
        for (Claim c : claims) {
            if (c == claim) {
                return true;
            }
        }
        return false;
    }

    /**
     * @return whether the delivery's claim ends after it is settled, not before: what its handler sent goes out in the
     *     AMQP transaction that accepts it, and only a commit may confirm it ({@link TransactionalSettlement})
     */
    private boolean endsAfterSettling(Delivery d) {
        return d.sendsInTransaction && policy.confirms(d.verdict);
    }

    /**
     * @return whether the handler's own database transaction recorded the confirm and committed (a store's
     *     transactional handler said so through {@link org.acemq.amqp.api.OutboxCapture#outboxStored()}): the end is
     *     recorded already, and confirming again would only cost the store a round trip that changes nothing
     */
    private boolean confirmedByHandler(Delivery d) {
        EnvelopeImpl e = d.envelope();
        return e != null && e.outbox() == EnvelopeImpl.Outbox.STORED && policy.confirms(d.verdict);
    }

    private void settleEnded(Delivery d) {
        boolean sent = false;
        try {
            if (!endsAfterSettling(d)) {
                d.unclaimed();
            }
            sent = settle(d, d.verdict);
        } catch (RuntimeException | Error e) {
            LOG.error("Subscription '{}': a delivery could not be settled", name, e);
        } finally {
            completed(d, sent);
        }
    }

    /**
     * Marks the delivery's run completed (its claim ended, its outcome sent or arranged), then starts the hold of a
     * retry in place decided for it ({@link #settle}). Not the other way round: a hold that ends at once would make the
     * delivery run again, and this run's completion would then be taken for the next run's.
     */
    private void completed(Delivery d, boolean sent) {
        Verdict retry = d.retryVerdict;
        d.retryVerdict = null;
        d.completed(sent);
        if (retry != null) {
            holds.hold(d, retry.delay(), () -> runAgain(d, retry));
        }
    }

    // ------------------------------------------------------------------ the store side

    /**
     * Records completion, retrying with back-off while the store fails. A claim whose confirm is not recorded within
     * the confirm timeout, or whose key the store refuses, is returned: what its delivery is settled with is the
     * policy's decision ({@link OutcomePolicy#confirmNotRecorded}).
     *
     * @return the claims whose confirm was not recorded (the same instances), usually none
     */
    List<Claim> confirm(List<Claim> claims) {
        long deadline = ticker.read() + confirmTimeout.toNanos();
        long pauseMillis = 20;
        List<Claim> left = claims;
        List<Claim> unrecorded = List.of();
        boolean outageReported = false;
        for (int attempt = 1; ; attempt++) {
            try {
                List<Claim> lost = store.confirmAll(left);
                gate.success();
                for (Claim c : lost) {
                    LOG.warn("Subscription '{}': {} was confirmed after its lease had been taken over", name,
                            LogSafe.id(c.messageId()));
                }
                if (attempt > 1) {
                    LOG.info("Subscription '{}': {} confirmed after {} attempts", name, what(left), attempt);
                }
                return unrecorded;
            } catch (InvalidMessageIdException e) {
                // the store took this key when it was claimed and refuses it now: it never will take it
                List<Claim> rest = new ArrayList<>(left.size());
                List<Claim> refused = new ArrayList<>(1);
                for (Claim c : left) {
                    (c.messageId().equals(e.messageId()) ? refused : rest).add(c);
                }
                boolean named = !refused.isEmpty();
                LOG.error("Subscription '{}': the store refuses to record {} ({}); it is {} anyway (a later duplicate "
                        + "of it may run again)", name, named ? LogSafe.id(e.messageId()) : what(left),
                        Errors.describe(e), unrecordedOutcome());
                unrecorded = plus(unrecorded, named ? refused : left);
                if (!named || rest.isEmpty()) {
                    return unrecorded;
                }
                left = rest;
            } catch (RuntimeException e) {
                if (!outageReported) {
                    outageReported = true;
                    gate.failure(e);
                }
                long remaining = deadline - ticker.read();
                // the last attempt is made at the deadline itself: a store that answers within the timeout loses nothing
                if (remaining <= 0 || !pause(Duration.ofNanos(Math.min(Duration.ofMillis(pauseMillis).toNanos(),
                        remaining)))) {
                    LOG.error("Subscription '{}': handler succeeded but the store could not record {} within {}{}; it "
                            + "is {} anyway (a later duplicate may run again): {}", name, what(left), confirmTimeout,
                            remaining <= 0 ? "" : " (the consumer closed meanwhile)", unrecordedOutcome(),
                            Errors.describe(e));
                    return plus(unrecorded, left);
                }
                pauseMillis = Math.min(pauseMillis * 2, 1_000);
            }
        }
    }

    /** Releases claims; a failure leaves them to lapse with their leases (copies are held back meanwhile, never lost). */
    void release(List<Claim> claims) {
        try {
            store.releaseAll(claims);
        } catch (RuntimeException e) {
            LOG.warn("Subscription '{}': could not release {} ({}); it frees when its lease expires", name,
                    what(claims), Errors.describe(e));
            if (!(e instanceof InvalidMessageIdException)) {
                gate.failure(e);
            }
        }
    }

    /** @return how a processed delivery whose confirm was not recorded is settled, for the log */
    private String unrecordedOutcome() {
        return policy.confirmNotRecorded(Verdict.PROCESSED).outcome().name().toLowerCase(Locale.ROOT);
    }

    private static List<Claim> plus(List<Claim> a, List<Claim> b) {
        if (a.isEmpty()) {
            return b;
        }
        List<Claim> all = new ArrayList<>(a);
        all.addAll(b);
        return all;
    }

    private static String what(List<Claim> claims) {
        return claims.size() == 1 ? LogSafe.id(claims.get(0).messageId()) : claims.size() + " messages";
    }

    /**
     * Waits on the consumer's scheduler (so that tests can move time), without holding anything. The wait is on a
     * monitor, not a latch: an AQS latch may leave a stray unpark behind, which would cut short the handler's next
     * {@code LockSupport.park} on this thread.
     *
     * @return false if the scheduler refused the wait (the consumer is closed): no more retries then
     */
    private boolean pause(Duration delay) {
        boolean[] woken = {false};
        try {
            scheduler.schedule(() -> {
                synchronized (woken) {
                    woken[0] = true;
                    woken.notifyAll();
                }
            }, delay);
            synchronized (woken) {
                while (!woken[0]) {
                    woken.wait();
                }
            }
            return true;
        } catch (RejectedExecutionException e) {
            return false; // closed: retrying at once would spin against a store that is down
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return true;
        }
    }

    // ------------------------------------------------------------------ settling

    /**
     * Sends a delivery's verdict now, or holds the delivery first for the verdict's delay (unless the policy drops
     * the hold: {@link OutcomePolicy#whenSent}).
     *
     * @param d a delivery whose claim, if it held one, has ended
     * @param decided a SETTLE verdict, or a RETRY verdict from the end stage itself (then its hold starts when the
     *     run is marked completed)
     * @return whether it was sent, enlisted or scheduled (false: abandoned, its link is gone)
     */
    boolean settle(Delivery d, Verdict decided) {
        Verdict verdict = policy.whenSent(decided, stopping.getAsBoolean());
        if (verdict.action() == Verdict.Action.RETRY) {
            d.moveTo(Delivery.State.HELD);
            d.retryVerdict = verdict; // held once this run is marked completed (completed(Delivery, boolean))
            return true;
        }
        if (!verdict.delay().isZero()) {
            d.moveTo(Delivery.State.HELD);
            holds.hold(d, verdict.delay(), () -> send(d, verdict));
            return true;
        }
        return send(d, verdict);
    }

    /** The retry back-off is over: the delivery runs again, unless the subscription stops (then it goes back). */
    private void runAgain(Delivery d, Verdict verdict) {
        if (stopping.getAsBoolean()) {
            send(d, policy.whenSent(verdict, true));
            return;
        }
        d.again();
        retry.accept(d);
    }

    private boolean send(Delivery d, Verdict verdict) {
        d.moveTo(Delivery.State.SETTLED);
        return settlement.settle(d, verdict);
    }

    /**
     * Whatever broke (a store bug, a linkage error, a bug in a stage), the delivery must still be settled as the
     * policy says for that ({@link OutcomePolicy#unexpectedFailure}) and free its slot; a claim it holds is released.
     * A delivery already settled is left as it is.
     *
     * @return the verdict it was settled with, or null if it had been settled already
     */
    Verdict failed(Delivery d, Throwable e) {
        Verdict verdict = policy.unexpectedFailure();
        LOG.error("Subscription '{}': unexpected failure while processing a delivery; settling it as {}", name,
                verdict.outcome().name().toLowerCase(Locale.ROOT), e);
        Claim claim = d.claim;
        d.unclaimed();
        d.claimAtStart = false;
        if (claim != null) {
            try {
                store.release(claim);
            } catch (RuntimeException re) {
                LOG.warn("Subscription '{}': could not release {} ({}); it frees when its lease expires", name,
                        LogSafe.id(claim.messageId()), Errors.describe(re));
            }
        }
        if (d.state() == Delivery.State.SETTLED
                || (d.state() == Delivery.State.HELD && !holds.cancel(d))) {
            return null; // settled already, or its hold is settling it
        }
        d.moveTo(Delivery.State.SETTLED);
        d.completed(settlement.settle(d, verdict));
        return verdict;
    }

    // ------------------------------------------------------------------ for the lease heartbeat

    /**
     * Calls {@code action} for each delivery handed over whose claim has not ended yet: those the leader ends now,
     * then those waiting on the stack. Both are walked without a lock (bounded: the leader may take and reorder the
     * stack, and unlinks its batch as it settles it, meanwhile), so a delivery may be missed by one sweep or seen twice;
     * the heartbeat's next sweep makes up for it. The leader unlinks a delivery only after its claim's end was
     * recorded, so a batch waiting on a slow store call is always reached whole.
     */
    void forEachEnding(Consumer<Delivery> action) {
        walk(inFlight, action);
        walk(pending.get(), action);
    }

    private static void walk(Delivery first, Consumer<Delivery> action) {
        int walked = 0;
        for (Delivery d = first; d != null && walked < MAX_WALK; d = d.nextPending, walked++) {
            if (d.state() == Delivery.State.ENDING) {
                action.accept(d);
            }
        }
    }
}
