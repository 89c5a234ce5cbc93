package org.acemq.amqp.consumer.internal;

import java.util.concurrent.ExecutionException;
import org.apache.qpid.protonj2.client.ErrorCondition;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.client.exceptions.ClientResourceRemotelyClosedException;

/**
 * Turns exceptions into short descriptions for logs and health, and unwraps futures. Public for the
 * {@code engine} package only (this package is not exported).
 */
public final class Errors {

    private Errors() {
    }

    /**
     * @return the exception's class and message (for a broker's refusal, its condition and description), with control
     *     characters escaped: a store's message may quote a message id, and any publisher can choose one
     */
    public static String describe(Throwable error) {
        Throwable t = unwrap(error);
        if (t instanceof ClientResourceRemotelyClosedException closed && closed.getErrorCondition() != null) {
            ErrorCondition c = closed.getErrorCondition();
            return LogSafe.text(t.getClass().getSimpleName() + ": " + c.condition()
                    + (c.description() == null ? "" : " \"" + c.description() + "\""));
        }
        String message = t.getMessage();
        return LogSafe.text(t.getClass().getSimpleName() + (message == null ? "" : ": " + message));
    }

    /** @return the broker's error condition of a remote close, or null */
    static ErrorCondition condition(Throwable error) {
        Throwable t = unwrap(error);
        return t instanceof ClientResourceRemotelyClosedException closed ? closed.getErrorCondition() : null;
    }

    static Throwable unwrap(Throwable error) {
        Throwable t = error;
        while (t instanceof ExecutionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** @return the client exception behind a failed future, or a wrapper for anything else */
    static ClientException clientException(Throwable error) {
        Throwable t = unwrap(error);
        if (t instanceof ClientException ce) {
            return ce;
        }
        return new ClientException(describe(t), t);
    }
}
