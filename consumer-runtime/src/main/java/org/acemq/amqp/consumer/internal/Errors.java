package org.acemq.amqp.consumer.internal;

import java.util.concurrent.ExecutionException;
import org.apache.qpid.protonj2.client.exceptions.ClientException;

/** Turns exceptions into short descriptions for logs and health, and unwraps futures. */
final class Errors {

    private Errors() {
    }

    static String describe(Throwable error) {
        Throwable t = unwrap(error);
        String message = t.getMessage();
        return t.getClass().getSimpleName() + (message == null ? "" : ": " + message);
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
