package org.acemq.amqp.consumer.internal;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * One handler thread's slot: the delivery it is processing (read by health and by the lease heartbeat, instead of a
 * map entry per delivery) and the small protocol that lets {@code close()} wake the thread from a blocking
 * {@code receive()} without its interrupt ever reaching a handler.
 *
 * <p>The thread moves {@link #RECEIVING} to {@link #IDLE} when {@code receive()} returns. A waker moves
 * {@code RECEIVING} to {@link #WAKING}, interrupts the thread, then sets {@link #WOKEN}. A thread that finds its slot
 * no longer {@code RECEIVING} waits for {@code WOKEN} and clears its interrupt flag before it does anything else.
 */
final class HandlerSlot {

    static final int IDLE = 0;
    static final int RECEIVING = 1;
    static final int WAKING = 2;
    static final int WOKEN = 3;

    private final AtomicInteger state = new AtomicInteger(IDLE);
    volatile Thread thread;
    /** The deliveries this thread processes (one, or a batch), or null. */
    volatile java.util.List<Delivery> current;

    /** On the slot's thread, just before {@code receive()}. */
    void receiving() {
        state.set(RECEIVING);
    }

    /** On the slot's thread, once {@code receive()} returned or threw: swallows an interrupt meant for it. */
    void received() {
        if (!state.compareAndSet(RECEIVING, IDLE)) {
            while (state.get() != WOKEN) {
                Thread.onSpinWait();
            }
            Thread.interrupted();
            state.set(IDLE);
        }
    }

    /** From any thread: interrupts the slot's thread if, and only if, it is inside {@code receive()}. */
    void wake() {
        Thread t = thread;
        if (t != null && state.compareAndSet(RECEIVING, WAKING)) {
            t.interrupt();
            state.set(WOKEN);
        }
    }
}
