package org.acemq.amqp.store.jdbc.internal;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import org.acemq.amqp.api.StoreUnavailableException;

/**
 * Leader/follower group commit: coalesces concurrent requests into batches, one batch per statement, with at most
 * {@code maxInFlight} batches executing at once over all {@linkplain Lane lanes} (one lane per kind of statement).
 *
 * <p>How a request travels:
 * <ol>
 *   <li>The caller appends its request to its lane's queue. If fewer than {@code maxInFlight} batches are executing,
 *       it takes a slot and becomes the <em>leader</em> at once: it takes up to {@code maxBatch} requests from the
 *       head of the queue (its own among them when the queue was idle) and executes them <b>on its own thread</b>.
 *       An idle store therefore adds no delay: a lone caller runs its statement immediately.</li>
 *   <li>Otherwise it waits, on its request's monitor (never with {@code LockSupport}, whose stray permits would
 *       cut short the caller's next {@code park}, often in application code). Requests that arrive while
 *       statements are in flight accumulate in the queue and become the next batch. There is no timer anywhere.</li>
 *   <li>A leader whose batch is done answers its callers and then, while requests are waiting, <b>leads the next
 *       batch itself</b> (of whichever lane has the oldest waiting request), up to {@value #MAX_CONSECUTIVE_BATCHES}
 *       batches in a row, so that a busy slot never sits idle waiting for a woken thread to be scheduled. After that
 *       it hands the slot to the oldest waiting request of any lane (which wakes up and leads the next batch of its
 *       lane), or frees it when nothing waits, and returns with its own answer.</li>
 * </ol>
 *
 * <p>Every request of a batch is answered, one way or another, before its leader returns: by the lane's
 * {@link BatchExecutor}, or with the exception the executor threw, or (if the executor forgot one) with an
 * {@link IllegalStateException}.
 *
 * <p><b>Interruption.</b> A thread that is interrupted before its request was taken into a batch gets a
 * {@link StoreUnavailableException} (cause {@link InterruptedException}, interrupt flag kept) and its request is
 * withdrawn: nothing was written. Once its request is part of an executing batch, the outcome is already decided by
 * the database, so the caller waits for it (as long as the statement takes) and returns it with the interrupt flag
 * set again. A leader executes its batch with its interrupt flag cleared, so that one interrupted caller cannot make
 * a pool or driver fail the other callers' statement; the flag is restored afterwards.
 */
public final class GroupCommit {

    /**
     * The most batches one thread leads in a row before it hands its slot on: bounds how long a leader's own caller
     * waits beyond its own batch.
     */
    public static final int MAX_CONSECUTIVE_BATCHES = 8;

    /**
     * The group-commit lock, a monitor: a {@code ReentrantLock} (AQS) can leave a stray {@code unpark} permit with a
     * thread that took the lock without parking after its predecessor had already chosen to wake it, and that permit
     * would cut short the caller's next {@code LockSupport.park} (application code, after the store call returned).
     * HotSpot monitors park on a separate event, never on the {@code LockSupport} permit.
     */
    private final Object lock = new Object();
    private final int maxBatch;
    private final int maxInFlight;
    private final List<Lane<?>> lanes = new ArrayList<>();
    private int inFlight;   // guarded by lock
    private long sequence;  // guarded by lock

    /**
     * @param maxBatch the most requests in one batch, at least 1
     * @param maxInFlight the most batches executing at once over all lanes, at least 1
     */
    public GroupCommit(int maxBatch, int maxInFlight) {
        if (maxBatch < 1 || maxInFlight < 1) {
            throw new IllegalArgumentException("maxBatch and maxInFlight must be >= 1, but were " + maxBatch + ", "
                    + maxInFlight);
        }
        this.maxBatch = maxBatch;
        this.maxInFlight = maxInFlight;
    }

    /**
     * Adds a lane: a queue of requests of one kind, executed by one kind of statement.
     *
     * @param name used in messages
     * @param executor answers a batch
     * @param <Q> the request type
     * @return the lane
     */
    public <Q extends Request<?>> Lane<Q> lane(String name, BatchExecutor<Q> executor) {
        Lane<Q> lane = new Lane<>(name, executor);
        synchronized (lock) {
            lanes.add(lane);
        }
        return lane;
    }

    /** @return how many batches execute right now (for tests and monitoring) */
    public int inFlight() {
        synchronized (lock) {
            return inFlight;
        }
    }

    /**
     * Executes one batch. Must answer every request (see {@link Request#complete} and {@link Request#fail}); a
     * thrown exception answers every request not yet answered with that exception.
     *
     * @param <Q> the request type
     */
    @FunctionalInterface
    public interface BatchExecutor<Q> {
        /**
         * @param batch one or more requests, in arrival order; may hold several requests for the same id
         */
        void execute(List<Q> batch);
    }

    /**
     * One caller's request and, once answered, its answer.
     *
     * @param <R> the answer type
     */
    public abstract static class Request<R> {
        long seq;                    // guarded by the GroupCommit lock
        boolean queued;              // guarded by the GroupCommit lock
        // written under the GroupCommit lock: promoted to lead the next batch of its lane. Volatile for the lock-free
        // check of a woken caller: a request that is done is out of every queue, so it is never promoted afterwards,
        // and a promotion before the answer is visible to whoever sees the answer (done is written later).
        volatile boolean lead;
        volatile boolean done;
        private R answer;            // published by the write of done
        private RuntimeException failure;
        private Error error;
        private boolean waiting;     // guarded by this request's monitor: its caller waits in await()

        /** @return whether this request has its answer */
        public final boolean isDone() {
            return done;
        }

        /**
         * Answers this request. The first answer wins.
         *
         * @param value the answer
         */
        public final void complete(R value) {
            if (done) {
                return;
            }
            this.answer = value;
            finished();
        }

        /**
         * Answers this request with an exception, thrown to its caller. The first answer wins.
         *
         * @param t the exception
         */
        public final void fail(Throwable t) {
            if (done) {
                return;
            }
            if (t instanceof Error e) {
                this.error = e;
            } else if (t instanceof RuntimeException e) {
                this.failure = e;
            } else {
                this.failure = new IllegalStateException(t);
            }
            finished();
        }

        /**
         * Publishes the answer and wakes the caller if it waits. Waiting is on this request's monitor, not with
         * {@code LockSupport.park}: an unpark that finds its thread not parked (a leader answering its own request, a
         * caller that saw its answer before it parked) would leave a permit behind, and the caller's next
         * {@code park} (often in application code, after the store call returned) would return at once.
         */
        private synchronized void finished() {
            this.done = true;
            if (waiting) {
                notifyAll();
            }
        }

        /** Under this request's monitor: promoted to lead, wake the caller if it waits. */
        private synchronized void promoted() {
            this.lead = true;
            if (waiting) {
                notifyAll();
            }
        }

        /**
         * Waits until the request is answered or promoted, or the thread is interrupted (its flag is then set again
         * for the caller's loop to see).
         */
        synchronized void await() {
            while (!done && !lead) {
                waiting = true;
                try {
                    wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                } finally {
                    waiting = false;
                }
            }
        }

        R result() {
            if (error != null) {
                throw error;
            }
            if (failure != null) {
                throw failure;
            }
            return answer;
        }

        /**
         * @return what to throw when the caller is interrupted before the request was taken into a batch
         * @param cause the interruption
         */
        protected abstract StoreUnavailableException interrupted(InterruptedException cause);
    }

    /**
     * The queue of one kind of request.
     *
     * @param <Q> the request type
     */
    public final class Lane<Q extends Request<?>> {
        private final String name;
        private final BatchExecutor<Q> executor;
        private final ArrayDeque<Q> queue = new ArrayDeque<>();  // guarded by lock
        private boolean leaderPending;                           // guarded by lock

        private Lane(String name, BatchExecutor<Q> executor) {
            this.name = name;
            this.executor = executor;
        }

        /**
         * Submits a request and waits for its answer, leading batches on this thread when it is its turn.
         *
         * @param request the caller's request
         * @param <R> the answer type
         * @return the answer
         * @throws StoreUnavailableException from the batch, or when interrupted before the request was taken
         */
        public <R> R submit(Request<R> request) {
            @SuppressWarnings("unchecked")
            Q q = (Q) Objects.requireNonNull(request, "request");
            if (Thread.currentThread().isInterrupted()) {
                throw request.interrupted(new InterruptedException("interrupted before the request was queued"));
            }
            boolean interrupted = false;
            List<Q> batch = null;
            synchronized (lock) {
                q.seq = sequence++;
                q.queued = true;
                queue.addLast(q);
                if (inFlight < maxInFlight) {
                    inFlight++;
                    batch = drain();
                }
            }
            while (true) {
                if (batch != null) {
                    interrupted |= lead(this, batch);
                    batch = null;
                }
                if (q.done && !q.lead) {
                    break; // answered, and not promoted: no need for the lock
                }
                synchronized (lock) {
                    if (q.lead) {
                        // promoted: lead the next batch of this lane (even if our own request was answered by
                        // another leader meanwhile, the slot we were given must be used or handed on)
                        q.lead = false;
                        leaderPending = false;
                        batch = drain();
                        if (batch.isEmpty()) {
                            batch = null;
                            handOff();
                        } else {
                            continue;
                        }
                    }
                    if (q.done) {
                        break;
                    }
                    if (Thread.interrupted()) {
                        if (q.queued) {
                            queue.remove(q);
                            q.queued = false;
                            Thread.currentThread().interrupt();
                            throw q.interrupted(new InterruptedException("interrupted while waiting for a batch"));
                        }
                        interrupted = true; // already in an executing batch: wait for its outcome
                    }
                }
                q.await();
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            return request.result();
        }

        /** Under the lock: takes the next batch from the head of the queue. */
        private List<Q> drain() {
            int n = Math.min(maxBatch, queue.size());
            List<Q> batch = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                Q q = queue.pollFirst();
                q.queued = false;
                batch.add(q);
            }
            return batch;
        }

        /** Executes a batch on this thread and answers every request in it. */
        private void execute(List<Q> batch) {
            try {
                executor.execute(batch);
            } catch (Throwable t) {
                for (Q q : batch) {
                    q.fail(t);
                }
            } finally {
                for (Q q : batch) {
                    if (!q.done) {
                        q.fail(new IllegalStateException("group commit lane " + name + " left a request unanswered"));
                    }
                }
            }
        }

        @Override
        public String toString() {
            return "Lane[" + name + "]";
        }
    }

    /**
     * Executes a batch on this thread, then keeps the slot busy: while requests wait (and at most
     * {@value #MAX_CONSECUTIVE_BATCHES} batches in all) it takes the next batch of the lane with the oldest waiting
     * request and executes that too; finally hands the slot on or frees it.
     *
     * @return whether the thread was interrupted (its flag is cleared while it executes batches)
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private boolean lead(Lane<?> first, List<?> firstBatch) {
        boolean interrupted = Thread.interrupted();
        Lane lane = first;
        List batch = firstBatch;
        for (int run = 1;; run++) {
            lane.execute(batch);
            interrupted |= Thread.interrupted();
            synchronized (lock) {
                Lane<?> next = run < MAX_CONSECUTIVE_BATCHES ? oldestWaiting() : null;
                if (next == null) {
                    handOff();
                    return interrupted;
                }
                lane = next;
                batch = next.drain();
            }
        }
    }

    /** Under the lock: the lane whose head request waited longest, of those without a promoted leader, or null. */
    private Lane<?> oldestWaiting() {
        Lane<?> next = null;
        long oldest = Long.MAX_VALUE;
        for (Lane<?> lane : lanes) {
            if (!lane.leaderPending && !lane.queue.isEmpty() && lane.queue.peekFirst().seq < oldest) {
                oldest = lane.queue.peekFirst().seq;
                next = lane;
            }
        }
        return next;
    }

    /** Under the lock: gives the caller's slot to the oldest waiting request without a leader, or frees it. */
    private void handOff() {
        Lane<?> next = oldestWaiting();
        if (next == null) {
            inFlight--;
            return;
        }
        next.leaderPending = true;
        Request<?> head = next.queue.peekFirst();
        head.promoted();
    }

    /** @return the number of queued requests (for tests) */
    public int queued() {
        synchronized (lock) {
            int n = 0;
            for (Iterator<Lane<?>> it = lanes.iterator(); it.hasNext();) {
                n += it.next().queue.size();
            }
            return n;
        }
    }
}
