package org.acemq.amqp.samples.boot;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.convert.DurationUnit;

/**
 * The demo's own settings ({@code demo.*}); pass them as {@code --demo.orders=5000} and so on.
 *
 * @param orders distinct orders to publish
 * @param duplicateShare share of orders published a second time with the same message-id
 * @param transientShare share of orders whose first attempt fails
 * @param poison orders that fail on every attempt and end in the dead-letter queue
 * @param seed the seed of the workload plan
 * @param queue the queue
 * @param embeddedBroker whether to start an embedded Artemis broker (false: use acemq.connection.*)
 * @param stayUp how long to keep serving health and metrics after the verdict; 0 exits at once, negative never; a
 *     bare number is seconds ({@code --demo.stay-up=60}), units work too ({@code 2m})
 * @param timeout how long to wait for the consumption to complete; a bare number is seconds
 */
@ConfigurationProperties("demo")
public record DemoProperties(int orders, double duplicateShare, double transientShare, int poison, long seed,
                             String queue, boolean embeddedBroker,
                             @DurationUnit(ChronoUnit.SECONDS) Duration stayUp,
                             @DurationUnit(ChronoUnit.SECONDS) Duration timeout) {
}
