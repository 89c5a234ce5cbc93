package org.acemq.amqp.consumer.internal;

import java.util.List;
import java.util.function.Consumer;

/**
 * Which admitted work a subscription's handler threads run next, and which thread takes deliveries from the client
 * meanwhile: the scheduling policy of a processing mode, in front of an unchanged claim &rarr; run &rarr; end path.
 *
 * <p><b>Leader/follower.</b> The subscription has no thread of its own. A handler thread that needs work asks
 * {@link #next}: it gets runnable work if the policy has some, or, if nobody is taking deliveries from the client, the
 * {@link #LEAD} token: it becomes the <em>leader</em>, takes a batch from the client, has it read and claimed, hands
 * the admitted deliveries over with {@link #led} and asks again. Meanwhile the other threads wait here. So a lone
 * delivery is claimed and started by the thread that took it, and a busy subscription claims many per store call.
 *
 * <p><b>Policies.</b> {@link ArrivalOrder} runs deliveries one by one in the order they arrived (any delivery may run
 * beside any other); {@link KeyOrder} runs the deliveries of one ordering key one at a time, in arrival order, and
 * different keys side by side; {@link Batches} hands out up to a batch of deliveries at a time. Each decides only
 * what may run next: reading, claiming, running and ending are the same for every policy ({@link Pipeline}).
 *
 * <p>Waiting is on a monitor, never on {@code LockSupport} or an AQS lock: a stray unpark left behind would cut short
 * the next park of the application's handler on that thread.
 */
abstract class Schedule {

    /** The token {@link #next} returns to the thread that is to take deliveries from the client. */
    static final List<Delivery> LEAD = List.of();

    /** Guards the fields below and every subclass's queue; idle threads wait on it. */
    final Object lock = new Object();
    private final StopSignal stop;
    private final org.acemq.amqp.consumer.Ticker ticker;
    private boolean leading;
    /** A leader holds deliveries taken from the client that are not handed over yet. */
    private volatile boolean admitting;
    private int idle;
    private volatile int idleCount;
    private volatile int waitingCount;

    /** Whether the subscription stops taking deliveries (the consumer closes). */
    interface StopSignal {
        boolean stopping();
    }

    Schedule(StopSignal stop, org.acemq.amqp.consumer.Ticker ticker) {
        this.stop = stop;
        this.ticker = ticker;
    }

    // ------------------------------------------------------------------ the policy (under the lock)

    /**
     * Under the lock: takes the work to run next, if the policy lets any run now.
     *
     * @param now the ticker's time
     * @param stopping the subscription stops: hand out what waits without waiting for more
     * @return one delivery, or a batch; null if nothing may run now
     */
    abstract List<Delivery> poll(long now, boolean stopping);

    /** Under the lock: an admitted delivery waits to run. */
    abstract void offer(Delivery d);

    /** Under the lock: @return how many admitted deliveries wait (runnable or not) */
    abstract int waiting();

    /**
     * Under the lock: how long a thread that found nothing to run may wait before the policy may have work although
     * nothing new arrives (a batch that closes by time).
     *
     * @param now the ticker's time
     * @return nanoseconds to wait at most, or 0 to wait until woken
     */
    long waitNanos(long now) {
        return 0;
    }

    /**
     * Under the lock: how long the intake leader may wait for the client before the policy has work anyway (a batch
     * that closes by time).
     *
     * @param now the ticker's time
     * @return nanoseconds, or 0 to wait until a delivery arrives
     */
    long leadNanos(long now) {
        return 0;
    }

    /** @return how long the intake leader may wait for the client now (see {@link #leadNanos}) */
    final long leadNanos() {
        synchronized (lock) {
            return leadNanos(ticker.read());
        }
    }

    /** Under the lock: the work's deliveries are finished with (settled, or ending): the policy may free their key. */
    void finished(List<Delivery> work) {
    }

    /** Under the lock: a delivery retried in place runs again; by default it waits as a new one. */
    void offerAgain(Delivery d) {
        offer(d);
    }

    /** Under the lock: @return whether the intake may take more now (false: the policy holds too much already) */
    boolean mayTake() {
        return true;
    }

    /** Under the lock: @return every admitted delivery no thread started, removed */
    abstract List<Delivery> removeAll();

    /** Under the lock: calls {@code action} for every admitted delivery waiting */
    abstract void forEach(Consumer<Delivery> action);

    // ------------------------------------------------------------------ leader/follower

    /**
     * On a handler thread: waits for work.
     *
     * @return work to run (one delivery or a batch, in the order to run it); {@link #LEAD} if this thread is to take
     *     deliveries from the client and then call {@link #led}; null once the subscription stops and nothing
     *     admitted is left
     */
    final List<Delivery> next() {
        synchronized (lock) {
            while (true) {
                boolean stopping = stop.stopping();
                List<Delivery> work = poll(ticker.read(), stopping);
                if (work != null) {
                    waitingCount = waiting();
                    if (idle > 0 && (waitingCount > 0 || !leading)) {
                        lock.notify(); // the next one takes the next work, or leads the intake
                    }
                    return work;
                }
                if (!leading && (stopping || mayTake())) {
                    if (stopping) {
                        // what a policy still holds back (a busy key) is released by the closing thread (drain)
                        lock.notify(); // let the next waiter see it too
                        return null;
                    }
                    leading = true;
                    return LEAD;
                }
                idle++;
                idleCount = idle;
                try {
                    long nanos = waitNanos(ticker.read());
                    if (nanos > 0) {
                        lock.wait(Math.max(1, nanos / 1_000_000), (int) (nanos % 1_000_000));
                    } else {
                        lock.wait();
                    }
                } catch (InterruptedException e) {
                    // only close() interrupts a waiting thread, after setting stopping: the loop sees it
                } finally {
                    idle--;
                    idleCount = idle;
                }
            }
        }
    }

    /** The leader took deliveries from the client: until it hands them over, the subscription is busy. */
    final void admitting() {
        admitting = true;
    }

    /**
     * The leader hands over what it admitted (in the order received) and stops leading.
     *
     * @param admitted the deliveries to run; those decided without running are not among them
     */
    final void led(List<Delivery> admitted) {
        synchronized (lock) {
            leading = false;
            admitting = false;
            for (Delivery d : admitted) {
                offer(d);
            }
            waitingCount = waiting();
            if (idle > 0) {
                // One waiter: it takes work and wakes the next while more waits, or leads the intake. A chain, not a
                // crowd: with a fast handler the running threads take most of the batch themselves, and a thread
                // woken for nothing costs a context switch.
                lock.notify();
            }
        }
    }

    /** A delivery goes back into the schedule to run again (ordered retry), ahead of the later ones of its key. */
    final void again(Delivery d) {
        synchronized (lock) {
            offerAgain(d);
            waitingCount = waiting();
            lock.notify();
        }
    }

    /**
     * @return whether the policy needs to hear when work is finished with ({@link #finished}); the default does not,
     *     and {@link #done} then takes no lock
     */
    boolean tracksFinished() {
        return false;
    }

    /** The work's deliveries are finished with: a policy that held their key back lets the next one run. */
    final void done(List<Delivery> work) {
        if (!tracksFinished()) {
            return;
        }
        synchronized (lock) {
            finished(work);
            waitingCount = waiting();
            if (idle > 0 && waitingCount > 0) {
                lock.notify();
            }
        }
    }

    /** @return how many threads wait for work now (the intake claims at least one delivery per idle thread) */
    final int idleThreads() {
        return idleCount;
    }

    /** @return how many admitted deliveries wait now (a hint; no lock) */
    final int waitingHint() {
        return waitingCount;
    }

    /** @return whether a leader is taking deliveries or admitted ones wait for a thread */
    final boolean busy() {
        synchronized (lock) {
            return admitting || waiting() > 0;
        }
    }

    /** Wakes every thread waiting for work (the subscription stops). */
    final void wakeAll() {
        synchronized (lock) {
            lock.notifyAll();
        }
    }

    /** @return the admitted deliveries waiting for a thread, removed (on close: the caller releases them) */
    final List<Delivery> drain() {
        synchronized (lock) {
            List<Delivery> all = removeAll();
            waitingCount = 0;
            return all;
        }
    }

    /** Calls {@code action} for each admitted delivery waiting (a snapshot; for the lease heartbeat and health). */
    final void forEachWaiting(Consumer<Delivery> action) {
        if (waitingCount == 0) {
            return;
        }
        List<Delivery> snapshot = new java.util.ArrayList<>();
        synchronized (lock) {
            forEach(snapshot::add);
        }
        snapshot.forEach(action);
    }
}
