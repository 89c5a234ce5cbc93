package org.acemq.amqp.consumer.internal;

import org.acemq.amqp.consumer.ConsumerObserver;

/** At-least-once: the outcome goes to the broker as a settled disposition on the delivery's own link. */
final class DirectSettlement implements Settlement {

    private final String name;
    private final ConsumerObserver observer;
    private final CreditAllocator allocator;

    DirectSettlement(String name, ConsumerObserver observer, CreditAllocator allocator) {
        this.name = name;
        this.observer = observer;
        this.allocator = allocator;
    }

    @Override
    public boolean settle(Delivery d, Verdict v) {
        try {
            boolean sent = d.link.send(d.amqp, v.outcome(), v.condition(), v.description());
            if (sent) {
                observer.settled(name, v.outcome(), v.reason());
            } else {
                observer.abandoned(name);
            }
            return sent;
        } finally {
            d.finish(allocator);
        }
    }
}
