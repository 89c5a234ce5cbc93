package org.acemq.amqp.spring;

import org.springframework.context.ApplicationEvent;

/** An event about one {@link AcemqListener}; its source is the {@link AcemqListenerHandle}. */
public abstract class AcemqListenerEvent extends ApplicationEvent {

    private static final long serialVersionUID = 1L;

    /** The listener's id. */
    private final String listenerId;

    /**
     * @param source the listener's handle
     * @param listenerId the listener's id
     */
    protected AcemqListenerEvent(Object source, String listenerId) {
        super(source);
        this.listenerId = listenerId;
    }

    /** @return the listener's id */
    public String getListenerId() {
        return listenerId;
    }
}
