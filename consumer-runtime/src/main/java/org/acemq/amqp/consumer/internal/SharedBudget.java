package org.acemq.amqp.consumer.internal;

/**
 * The in-flight budget shared by every subscription of a consumer (credit granted plus deliveries held). A limit of
 * 0 means unlimited: then only each subscription's own budget applies.
 */
final class SharedBudget {

    private final int limit;
    private int used;

    SharedBudget(int limit) {
        this.limit = limit;
    }

    boolean limited() {
        return limit > 0;
    }

    /** @return how many of {@code wanted} were granted (0..wanted) */
    int acquire(int wanted) {
        if (limit == 0) {
            return wanted; // unlimited: no monitor on the per-delivery path
        }
        synchronized (this) {
            return take(wanted);
        }
    }

    private int take(int wanted) {
        int granted = Math.max(0, Math.min(wanted, limit - used));
        used += granted;
        return granted;
    }

    void release(int count) {
        if (limit != 0) {
            synchronized (this) {
                used = Math.max(0, used - count);
            }
        }
    }

    synchronized int used() {
        return used;
    }
}
