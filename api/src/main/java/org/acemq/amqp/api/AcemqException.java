package org.acemq.amqp.api;

/** The root of every exception AceMQ throws on its own account. Always carries the cause when there is one. */
public class AcemqException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** @param message what went wrong */
    public AcemqException(String message) {
        super(message);
    }

    /**
     * @param message what went wrong
     * @param cause the underlying failure
     */
    public AcemqException(String message, Throwable cause) {
        super(message, cause);
    }
}
