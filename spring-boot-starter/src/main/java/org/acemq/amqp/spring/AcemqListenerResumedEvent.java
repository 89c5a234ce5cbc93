package org.acemq.amqp.spring;

/** A listener was resumed through its {@link AcemqListenerHandle}. */
public class AcemqListenerResumedEvent extends AcemqListenerEvent {

    private static final long serialVersionUID = 1L;

    /**
     * @param source the listener's handle
     * @param listenerId the listener's id
     */
    public AcemqListenerResumedEvent(Object source, String listenerId) {
        super(source, listenerId);
    }

    @Override
    public String toString() {
        return "AcemqListenerResumedEvent[" + getListenerId() + "]";
    }
}
