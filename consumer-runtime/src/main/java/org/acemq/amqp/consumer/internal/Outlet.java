package org.acemq.amqp.consumer.internal;

import java.util.List;
import org.acemq.amqp.consumer.SendPath;

/** Where messages go out ({@link Senders} on the consumer's connection). */
interface Outlet {

    /**
     * Sends every message and waits until the broker settled each.
     *
     * @param messages what to send, in order
     * @param path how they are sent (for the observer)
     * @return per message, in order: null if the broker accepted it, else why not
     */
    List<SendFailedException> send(List<Outbound> messages, SendPath path);
}
