package org.acemq.amqp.spring;

import java.util.Optional;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.springframework.context.SmartLifecycle;

/**
 * The bean that runs every {@link AcemqListener} of the application on one {@link AmqpConsumer}.
 *
 * <p>It starts with the application context (after every other bean, in phase {@link #PHASE}) unless
 * {@code acemq.consumer.auto-startup=false}, in which case the application calls {@link #start()} itself. It stops
 * first when the context closes, before the DataSource and the other beans the listeners use are destroyed:
 * it stops taking deliveries, releases those received but not started, lets running handlers finish (for at most
 * {@code acemq.consumer.shutdown-timeout}) and settles them. {@link #start()} after {@link #stop()} builds a new
 * consumer.
 *
 * <p><b>Threading:</b> thread-safe; {@link #start()} blocks until the consumer is connected and its links are
 * attached, {@link #stop()} until it is closed.
 */
public interface AcemqListenerContainer extends SmartLifecycle {

    /**
     * The lifecycle phase: {@code Integer.MAX_VALUE - 100}, the phase Spring's own message listener containers use:
     * start after, and stop before, the web server and every lower phase.
     */
    int PHASE = Integer.MAX_VALUE - 100;

    /**
     * @return the running consumer (for its {@code health()}), or empty while the container is not running
     */
    Optional<AmqpConsumer> consumer();
}
