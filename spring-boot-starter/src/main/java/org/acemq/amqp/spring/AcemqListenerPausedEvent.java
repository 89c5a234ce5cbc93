package org.acemq.amqp.spring;

/** A listener was paused through its {@link AcemqListenerHandle}. */
public class AcemqListenerPausedEvent extends AcemqListenerEvent {

    private static final long serialVersionUID = 1L;

    /**
     * @param source the listener's handle
     * @param listenerId the listener's id
     */
    public AcemqListenerPausedEvent(Object source, String listenerId) {
        super(source, listenerId);
    }

    @Override
    public String toString() {
        return "AcemqListenerPausedEvent[" + getListenerId() + "]";
    }
}
