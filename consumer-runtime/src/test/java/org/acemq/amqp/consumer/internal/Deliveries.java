package org.acemq.amqp.consumer.internal;

import java.lang.reflect.Proxy;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/**
 * Deliveries for the stage tests, with no connection: a protonj2 {@code Delivery} is a {@link Proxy} that hands out a
 * message built with {@link Message#create} (or fails to decode), on a {@link ReceiverLink} with no session whose
 * control executor runs tasks in place. Its receiver is a proxy too, over a queue the test fills.
 */
final class Deliveries {

    static final String ADDRESS = "orders";

    final CreditAllocator allocator = new CreditAllocator(0);
    final CreditAllocator.Member member;
    final ReceiverLink link;
    /** What the receiver proxy's {@code receive()}/{@code tryReceive()} hand out (null when there is no receiver). */
    final BlockingQueue<org.apache.qpid.protonj2.client.Delivery> queue;
    /** How many times the receiver's blocking {@code receive()} was called. */
    final AtomicInteger receives = new AtomicInteger();

    /** A link with no receiver: for stages that never take from the client. */
    Deliveries() {
        this(null);
    }

    /** @param queue what the link's receiver hands out, or null for no receiver */
    Deliveries(BlockingQueue<org.apache.qpid.protonj2.client.Delivery> queue) {
        this.queue = queue;
        this.member = allocator.join("orders", 100, new CreditAllocator.Sink() {
            @Override
            public void grant(CreditAllocator.Member m, int credits) {
            }

            @Override
            public void drain(CreditAllocator.Member m) {
            }
        });
        this.link = new ReceiverLink(queue == null ? null : receiver(queue, receives), null, 0, member, Runnable::run);
    }

    /** @return a message with this message-id and body */
    static Message<String> message(String id, String body) {
        try {
            return Message.create(body).messageId(id);
        } catch (ClientException e) {
            throw new IllegalStateException(e);
        }
    }

    /** @return a delivery just taken, not read, of a message with this message-id and the body "body of id" */
    Arrival of(String id) {
        return of(message(id, "body of " + id));
    }

    /** @return a delivery just taken, not read, of this message */
    Arrival of(Message<?> message) {
        return Arrival.taken(amqp(message), link, false, 0);
    }

    /** @return a delivery just taken whose message cannot be decoded */
    Arrival undecodable() {
        return Arrival.taken(amqp(null), link, false, 0);
    }

    /**
     * @param message what {@code message()} returns; null: it throws {@link ClientException} (cannot be decoded)
     * @return a protonj2 delivery that is not settled by the broker and does nothing when settled
     */
    static org.apache.qpid.protonj2.client.Delivery amqp(Message<?> message) {
        return (org.apache.qpid.protonj2.client.Delivery) Proxy.newProxyInstance(Deliveries.class.getClassLoader(),
                new Class<?>[] {org.apache.qpid.protonj2.client.Delivery.class}, (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "message":
                            if (message == null) {
                                throw new ClientException("malformed section: test message cannot be decoded");
                            }
                            return message;
                        case "toString":
                            return "Delivery[" + (message == null ? "undecodable" : message.messageId()) + "]";
                        case "hashCode":
                            return System.identityHashCode(proxy);
                        case "equals":
                            return proxy == args[0];
                        default:
                            return empty(method.getReturnType(), proxy);
                    }
                });
    }

    /** A receiver whose {@code receive()} waits on the queue and whose {@code tryReceive()} polls it. */
    private static Receiver receiver(BlockingQueue<org.apache.qpid.protonj2.client.Delivery> queue,
                                     AtomicInteger receives) {
        return (Receiver) Proxy.newProxyInstance(Deliveries.class.getClassLoader(), new Class<?>[] {Receiver.class},
                (proxy, method, args) -> {
                    switch (method.getName()) {
                        case "receive":
                            receives.incrementAndGet();
                            try {
                                if (args != null && args.length == 2) {
                                    return queue.poll((Long) args[0], (java.util.concurrent.TimeUnit) args[1]);
                                }
                                return queue.take();
                            } catch (InterruptedException e) {
                                throw new ClientException("receive interrupted", e);
                            }
                        case "tryReceive":
                            return queue.poll();
                        case "queuedDeliveries":
                            return (long) queue.size();
                        case "toString":
                            return "Receiver[test]";
                        case "hashCode":
                            return System.identityHashCode(proxy);
                        case "equals":
                            return proxy == args[0];
                        default:
                            return empty(method.getReturnType(), proxy);
                    }
                });
    }

    private static Object empty(Class<?> type, Object proxy) {
        if (type == boolean.class) {
            return false;
        }
        if (type == int.class) {
            return 0;
        }
        if (type == long.class) {
            return 0L;
        }
        return type.isInstance(proxy) ? proxy : null;
    }
}
