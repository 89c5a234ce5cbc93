package org.acemq.amqp.consumer.internal;

import org.acemq.amqp.api.Claim;
import org.apache.qpid.protonj2.client.Message;

/**
 * One delivery from the moment a handler thread takes it from the client until it is settled or abandoned. Its fields
 * are written by the thread that processes it; {@code claim}, {@code claimedNanos} and {@code nextBeatNanos} are also
 * read by the lease heartbeat and by health.
 */
final class Delivery {

    final org.apache.qpid.protonj2.client.Delivery amqp;
    final ReceiverLink link;
    /** Whether the delivery holds a slot of its link (false if it was taken after the link ended). */
    final boolean counted;
    final long receivedNanos;
    Message<?> message;
    String key;
    EnvelopeImpl envelope;
    DeliveryScope scope;
    /** The claim held, or null. */
    volatile Claim claim;
    /** When the claim was granted (ticker), 0 while none is held. */
    volatile long claimedNanos;
    /** When the claim's lease is next renewed (ticker), 0 for never. */
    volatile long nextBeatNanos;
    private boolean finished;

    Delivery(org.apache.qpid.protonj2.client.Delivery amqp, ReceiverLink link, boolean counted, long receivedNanos) {
        this.amqp = amqp;
        this.link = link;
        this.counted = counted;
        this.receivedNanos = receivedNanos;
    }

    /**
     * Frees the delivery's slot, once: it is settled, abandoned, or its transaction ended.
     *
     * @param allocator the allocator of the link's member
     */
    void finish(CreditAllocator allocator) {
        synchronized (link.member.lock) {
            if (finished) {
                return;
            }
            finished = true;
            if (!counted) {
                return;
            }
            link.finished();
            allocator.released(link.member, 1);
        }
    }

    /** @return the key for log lines: escaped and shortened */
    String logId() {
        return LogSafe.id(key);
    }
}
