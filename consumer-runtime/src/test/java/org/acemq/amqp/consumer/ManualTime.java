package org.acemq.amqp.consumer;

import java.time.Duration;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Time that moves only when a test says so: a {@link Ticker} and a {@link Scheduler} for
 * {@link AmqpConsumer.Builder#ticker} and {@link AmqpConsumer.Builder#scheduler}. {@link #advance} moves the clock in
 * steps, running every task that falls due on the way, in order, on the test's thread.
 */
final class ManualTime implements Ticker, Scheduler {

    private final PriorityQueue<Task> tasks = new PriorityQueue<>();
    private final AtomicLong sequence = new AtomicLong();
    private long now;

    private final class Task extends CompletableFuture<Void> implements Comparable<Task> {
        final long due;
        final long order = sequence.incrementAndGet();
        final Runnable body;

        Task(long due, Runnable body) {
            this.due = due;
            this.body = body;
        }

        @Override
        public int compareTo(Task other) {
            return due != other.due ? Long.compare(due, other.due) : Long.compare(order, other.order);
        }
    }

    @Override
    public synchronized long read() {
        return now;
    }

    @Override
    public synchronized Future<?> schedule(Runnable task, Duration delay) {
        Task t = new Task(now + delay.toNanos(), task);
        tasks.add(t);
        return t;
    }

    /**
     * @param duration how far to move the clock
     * @return how many tasks ran
     */
    int advance(Duration duration) {
        long target;
        synchronized (this) {
            target = now + duration.toNanos();
        }
        int ran = 0;
        while (true) {
            Task next;
            synchronized (this) {
                next = tasks.peek();
                if (next == null || next.due > target) {
                    now = target;
                    return ran;
                }
                tasks.poll();
                now = next.due;
            }
            if (!next.isCancelled()) {
                next.body.run();
                next.complete(null);
                ran++;
            }
        }
    }
}
