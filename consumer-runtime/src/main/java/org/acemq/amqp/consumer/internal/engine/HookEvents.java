package org.acemq.amqp.consumer.internal.engine;

/** What the hooks of one link report, on the connection's I/O thread. Implementations must not block. */
public interface HookEvents {

    /** A transfer was aborted: it used one credit and will never be handed out. */
    void aborted();

    /** A drain started with {@link HookedLink#drain()} was answered; {@code unused} credit came back. */
    void drained(int unused);

    /**
     * The broker detached or closed the link.
     *
     * @param condition its error condition, or null
     * @param description its error description, or null
     */
    void closedByPeer(String condition, String description);

    /** A delivery arrived beyond the link's credit and was released unread (a disposition is on its way). */
    void beyondCredit();
}
