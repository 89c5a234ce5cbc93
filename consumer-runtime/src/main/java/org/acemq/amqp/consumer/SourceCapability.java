package org.acemq.amqp.consumer;

/**
 * The kind of node a subscription's receiver asks the broker for, sent as the capability of the attach's source.
 * Brokers that create addresses on demand use it to choose what to create: on ActiveMQ Artemis with its default
 * address settings (auto-created addresses are multicast) a receiver that states nothing gets a temporary subscription
 * queue that dies with its link, so messages published while the consumer is down are lost; with {@link #QUEUE} it
 * gets (or is refused, with a clear error) a durable anycast queue it shares with its peers.
 */
public enum SourceCapability {

    /** The default: a queue, shared by every consumer of the address and kept while none is attached. */
    QUEUE("queue"),

    /** A topic: each link gets its own copy of every message (a subscription queue that lives with the link). */
    TOPIC("topic"),

    /** Nothing is stated: the broker decides (the behaviour before this setting existed). */
    NONE(null);

    private final String symbol;

    SourceCapability(String symbol) {
        this.symbol = symbol;
    }

    /** @return the AMQP capability symbol sent in the source, or null for {@link #NONE} */
    public String symbol() {
        return symbol;
    }
}
