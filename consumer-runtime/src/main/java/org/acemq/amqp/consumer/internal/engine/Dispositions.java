package org.acemq.amqp.consumer.internal.engine;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import org.acemq.amqp.consumer.internal.Errors;
import org.apache.qpid.protonj2.engine.IncomingDelivery;
import org.apache.qpid.protonj2.engine.Scheduler;
import org.apache.qpid.protonj2.types.transport.DeliveryState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The settled dispositions of one link incarnation, written in batches on the connection's I/O thread: a thread that
 * settles pushes its disposition onto a lock-free stack and hands the I/O thread a write task only if it found the
 * stack empty (otherwise the task that the first of them queued is still to come); that task takes and writes every
 * disposition waiting, in the order they were handed over, and flushes the socket once. protonj2's own {@code
 * accept()} costs one task and one flush (a write system call) per delivery; here a busy link pays one per batch, and
 * the broker reads the batch in one go.
 *
 * <p>Each disposition is checked on the I/O thread at the moment of writing, as before batching: one whose connection
 * or link is gone is dropped and its {@code dropped} runs. A disposition handed over happens-before any task submitted
 * to the I/O thread afterwards (a link close, say): the write task that takes it was queued first.
 */
final class Dispositions {

    private static final Logger LOG = LoggerFactory.getLogger(Dispositions.class);
    private static final Flush FLUSH = Flush.load();

    private static final class Pending {
        final IncomingDelivery incoming;
        final DeliveryState state;
        final Runnable dropped;
        Pending next;

        Pending(IncomingDelivery incoming, DeliveryState state, Runnable dropped) {
            this.incoming = incoming;
            this.state = state;
            this.dropped = dropped;
        }
    }

    private final Scheduler io;
    private final Object connection;
    private final AtomicReference<Pending> waiting = new AtomicReference<>();
    private final Runnable writeTask = this::writeWaiting;

    /**
     * @param io the connection's I/O thread
     * @param connection protonj2's client connection (its output is flushed once per batch), or null
     */
    Dispositions(Scheduler io, Object connection) {
        this.io = io;
        this.connection = connection;
    }

    /**
     * Hands a settled disposition to the I/O thread.
     *
     * @param dropped runs if the disposition is not written (its connection or link was gone); must not block
     * @return false if the I/O thread takes no more tasks (the connection is closed): this disposition will not be
     *     written and {@code dropped} does not run for it
     */
    boolean add(IncomingDelivery incoming, DeliveryState state, Runnable dropped) {
        Pending p = new Pending(incoming, state, dropped);
        Pending head;
        do {
            head = waiting.get();
            p.next = head;
        } while (!waiting.compareAndSet(head, p));
        if (head != null) {
            return true; // a write task is queued already (the first of these queued it) and takes this one too
        }
        try {
            io.execute(writeTask);
            return true;
        } catch (RejectedExecutionException e) {
            // Nothing will write what waits: this caller's disposition is refused, the others handed over meanwhile
            // are dropped (unless a write task took this one already: then it is written, or dropped, there).
            boolean mine = false;
            for (Pending q = waiting.getAndSet(null); q != null; q = q.next) {
                if (q == p) {
                    mine = true;
                } else {
                    q.dropped.run();
                }
            }
            return !mine;
        }
    }

    /** On the I/O thread: writes what waits, oldest first, then flushes once. */
    private void writeWaiting() {
        Pending stack = waiting.getAndSet(null);
        if (stack == null) {
            return;
        }
        Pending ordered = null;
        while (stack != null) {
            Pending next = stack.next;
            stack.next = ordered;
            ordered = stack;
            stack = next;
        }
        if (ordered.next == null) {
            write(ordered); // a lone disposition: protonj2 writes and flushes it itself
            return;
        }
        boolean flushAfter = FLUSH != null && connection != null && FLUSH.off(connection);
        try {
            for (Pending p = ordered; p != null; p = p.next) {
                write(p);
            }
        } finally {
            if (flushAfter) {
                FLUSH.onAndFlush(connection);
            }
        }
    }

    private static void write(Pending p) {
        String why;
        try {
            if (EngineDeliveries.writable(p.incoming)) {
                p.incoming.disposition(p.state, true);
                return;
            }
            why = "its connection or link was gone when the I/O thread came to write it";
        } catch (RuntimeException e) {
            why = Errors.describe(e);
        }
        LOG.debug("Disposition {} on link '{}' dropped: {}", p.state, EngineDeliveries.linkName(p.incoming), why);
        try {
            p.dropped.run();
        } catch (RuntimeException e) {
            LOG.debug("Reporting a dropped disposition failed: {}", Errors.describe(e));
        }
    }

    /** protonj2 1.1.0's package-private switch of a client connection's output between write-and-flush and write. */
    private record Flush(MethodHandle autoFlushOff, MethodHandle autoFlushOn, MethodHandle flush) {

        static Flush load() {
            try {
                Class<?> type = Class.forName("org.apache.qpid.protonj2.client.impl.ClientConnection");
                MethodHandles.Lookup lookup = MethodHandles.privateLookupIn(type, MethodHandles.lookup());
                return new Flush(lookup.findVirtual(type, "autoFlushOff", MethodType.methodType(boolean.class)),
                        lookup.findVirtual(type, "autoFlushOn", MethodType.methodType(void.class)),
                        lookup.findVirtual(type, "flush", MethodType.methodType(void.class)));
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                LOG.debug("Dispositions are flushed one by one: {}", Errors.describe(e));
                return null;
            }
        }

        /** @return whether output was flushed at once before (then it must be switched back) */
        boolean off(Object connection) {
            try {
                return (boolean) autoFlushOff.invoke(connection);
            } catch (Throwable e) {
                return false;
            }
        }

        void onAndFlush(Object connection) {
            try {
                autoFlushOn.invoke(connection);
            } catch (Throwable e) {
                LOG.debug("Switching output flushing back on failed: {}", Errors.describe(e));
            }
            try {
                flush.invoke(connection);
            } catch (Throwable e) {
                LOG.debug("Flushing dispositions failed: {}", Errors.describe(e));
            }
        }
    }
}
