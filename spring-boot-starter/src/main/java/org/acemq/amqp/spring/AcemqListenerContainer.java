package org.acemq.amqp.spring;

import java.util.Map;
import java.util.Optional;
import org.acemq.amqp.consumer.AmqpConsumer;
import org.springframework.context.SmartLifecycle;

/**
 * The bean that runs every {@link AcemqListener} of the application: on one {@link AmqpConsumer} per connection in
 * use ({@code default}, which {@code acemq.connection.*} configures, and each name of {@code acemq.connections} a
 * listener chooses), all on the one idempotency store.
 *
 * <p>It starts with the application context (after every other bean, in phase {@link #PHASE}) unless
 * {@code acemq.consumer.auto-startup=false}, in which case the application calls {@link #start()} itself. It stops
 * first when the context closes (on the context-closed event, before the lifecycle processor stops anything and
 * before Boot closes the meter registries, so that what the close settles is still counted), long before the
 * DataSource and the other beans the listeners use are destroyed: it stops taking deliveries, releases those
 * received but not started, lets running handlers finish (for at most {@code acemq.consumer.shutdown-timeout}) and
 * settles them. {@link #start()} after {@link #stop()} builds a new consumer.
 *
 * <p><b>Threading:</b> thread-safe. {@link #start()} builds and starts the consumer and returns at once, while the
 * consumer connects and attaches its links in the background (retrying with the reconnect back-off; the
 * {@code acemq} health contributor is {@code DOWN} until it is connected); only with
 * {@code acemq.consumer.fail-fast-start=true} does it block until the consumer is connected and every link attached,
 * and throw if the broker cannot be reached. {@link #stop()} blocks until the consumer is closed (at most
 * {@code acemq.consumer.shutdown-timeout} for running handlers).
 */
public interface AcemqListenerContainer extends SmartLifecycle {

    /**
     * The lifecycle phase: {@code Integer.MAX_VALUE - 100}, the phase Spring's own message listener containers use:
     * start after, and stop before, the web server and every lower phase.
     */
    int PHASE = Integer.MAX_VALUE - 100;

    /**
     * @return the running consumer of the {@code default} connection (or, when no listener uses that one, of the first
     *     connection in use), for its {@code health()}; empty while the container is not running
     */
    Optional<AmqpConsumer> consumer();

    /**
     * @return the running consumers by connection name, in the order they started; empty while the container is not
     *     running
     */
    default Map<String, AmqpConsumer> consumers() {
        return consumer().map(c -> Map.of(AcemqProperties.DEFAULT_CONNECTION, c)).orElse(Map.of());
    }
}
