package org.acemq.amqp.consumer.testing;

import java.time.Duration;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.locks.ReentrantLock;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.acemq.amqp.consumer.Scheduler;
import org.acemq.amqp.consumer.Ticker;

/**
 * Time that moves only when a test says so: one object that is both the consumer's {@link Ticker} and its
 * {@link Scheduler}. Give it to {@link AmqpConsumer.Builder#ticker} and {@link AmqpConsumer.Builder#scheduler}, then
 * call {@link #advance} where a test would otherwise sleep: the clock moves in steps, from one due task to the next,
 * and each task that falls due on the way runs, in the order of its due time (tasks due at the same instant in the
 * order they were scheduled), on the thread that called {@code advance}.
 *
 * <pre>{@code
 * ManualTime time = new ManualTime();
 * AmqpConsumer consumer = AmqpConsumer.builder()...ticker(time).scheduler(time)...start();
 * time.advance(Duration.ofSeconds(30)); // the lease heartbeats and retry back-offs due by then run now
 * }</pre>
 *
 * <p>The clock starts at zero and never moves by itself. A task scheduled while {@code advance} runs (a heartbeat
 * that schedules the next one) runs in the same call if it falls due before the call's target. A task that throws
 * stops the call: the exception propagates to the caller, with the clock at that task's due time.
 *
 * <p><b>Threading:</b> thread-safe. {@link #read} and {@link #schedule} may be called from any thread, also from a
 * task; calls to {@code advance} from several threads take turns (one waits until the other has returned).
 */
public final class ManualTime implements Ticker, Scheduler {

    private final Object lock = new Object();
    private final ReentrantLock advancing = new ReentrantLock();
    private final PriorityQueue<Task> tasks = new PriorityQueue<>();
    private long sequence;
    private long now;

    /** A clock at zero with nothing scheduled. */
    public ManualTime() {
    }

    private static final class Task extends CompletableFuture<Void> implements Comparable<Task> {
        final long due;
        final long order;
        final Runnable body;

        Task(long due, long order, Runnable body) {
            this.due = due;
            this.order = order;
            this.body = body;
        }

        @Override
        public int compareTo(Task other) {
            return due != other.due ? Long.compare(due, other.due) : Long.compare(order, other.order);
        }
    }

    /** @return the nanoseconds this clock has been advanced by since it was made */
    @Override
    public long read() {
        synchronized (lock) {
            return now;
        }
    }

    /**
     * Queues {@code task} to run when the clock reaches now plus {@code delay}; it never runs inside this call, even
     * with a zero delay (it runs in the next {@link #advance}, a zero advance included).
     *
     * @return a handle: {@code cancel} before the task is due keeps it from running; {@code isDone} turns true once it
     *     ran (or was cancelled)
     */
    @Override
    public Future<?> schedule(Runnable task, Duration delay) {
        if (task == null || delay == null) {
            throw new NullPointerException(task == null ? "task" : "delay");
        }
        synchronized (lock) {
            Task t = new Task(now + Math.max(0, delay.toNanos()), ++sequence, task); // a negative delay: due now
            tasks.add(t);
            return t;
        }
    }

    /**
     * Moves the clock by {@code duration}, running every task due by then on this thread, in order.
     *
     * @param duration how far to move the clock, zero or positive
     * @return how many tasks ran (cancelled ones do not count)
     */
    public int advance(Duration duration) {
        if (duration.isNegative()) {
            throw new IllegalArgumentException("time does not go back: " + duration);
        }
        advancing.lock();
        try {
            long target;
            synchronized (lock) {
                target = now + duration.toNanos();
            }
            int ran = 0;
            while (true) {
                Task next;
                synchronized (lock) {
                    next = tasks.peek();
                    if (next == null || next.due > target) {
                        now = target;
                        return ran;
                    }
                    tasks.poll();
                    now = next.due;
                }
                if (next.isCancelled()) {
                    continue;
                }
                try {
                    next.body.run();
                } catch (RuntimeException | Error e) {
                    next.completeExceptionally(e);
                    throw e;
                }
                next.complete(null);
                ran++;
            }
        } finally {
            advancing.unlock();
        }
    }

    /** @return how many tasks wait for their time, not counting cancelled ones */
    public int pending() {
        synchronized (lock) {
            return (int) tasks.stream().filter(t -> !t.isCancelled()).count();
        }
    }

    @Override
    public String toString() {
        synchronized (lock) {
            return "ManualTime at " + Duration.ofNanos(now) + ", " + tasks.size() + " task(s) queued";
        }
    }
}
