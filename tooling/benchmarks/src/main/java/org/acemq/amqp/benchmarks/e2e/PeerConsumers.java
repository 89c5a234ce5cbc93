package org.acemq.amqp.benchmarks.e2e;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.jms.JmsComponent;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.spi.IdempotentRepository;
import org.apache.qpid.jms.JmsConnectionFactory;
import org.apache.qpid.protonj2.client.Client;
import org.springframework.amqp.client.SingleAmqpConnectionFactory;
import org.springframework.amqp.client.listener.AmqpMessageListenerContainer;

/**
 * What a user would run instead of AceMQ, each set up the way its own documentation shows, with a no-op handler:
 * Spring AMQP 4.1's protonj2-based AMQP 1.0 listener container (no de-duplication) and Camel's Idempotent Consumer
 * EIP on a JMS-over-AMQP 1.0 route. docs/benchmarks.md says exactly how each is configured and why.
 *
 * <p>As for every row, time runs from starting the consumer (container or route), which opens the connection, until
 * the listener has settled the last message; stopping is not timed. Both containers stop by waiting out a blocking
 * receive poll (1 s by default), which says nothing about throughput.
 */
final class PeerConsumers {

    private PeerConsumers() {
    }

    /**
     * Spring AMQP's {@link AmqpMessageListenerContainer} with autoAccept off: the listener settles each message
     * through the {@code AmqpAcknowledgment} the container puts on it (accepted), on the consumer's own thread.
     * One receiver link per consumer thread, each with {@code creditPerLink} initial credits that the container
     * tops up when half are used.
     */
    static Sample spring(Client client, String host, int port, String queue, int n, int threads, int creditPerLink,
                         ProcessHandle broker, String mode) throws Exception {
        CountDownLatch done = new CountDownLatch(n);
        SingleAmqpConnectionFactory connectionFactory = new SingleAmqpConnectionFactory(client).setHost(host)
                .setPort(port);
        AmqpMessageListenerContainer container = new AmqpMessageListenerContainer(connectionFactory);
        container.setQueueNames(queue);
        container.setConsumersPerQueue(threads);
        container.setAutoAccept(false);
        container.setInitialCredits(creditPerLink);
        container.setupMessageListener(message -> {
            message.getMessageProperties().getAmqpAcknowledgment().acknowledge();
            done.countDown();
        });
        container.afterPropertiesSet();
        try {
            Sample.Meter meter = Sample.Meter.start(broker, null);
            container.start();
            EndToEndBenchmark.awaitAll(done, mode, n);
            return meter.stop(mode, threads, n);
        } finally {
            CountDownLatch stopped = new CountDownLatch(1);
            container.stop(stopped::countDown);
            stopped.await(60, TimeUnit.SECONDS);
            connectionFactory.destroy();
        }
    }

    /**
     * Camel's Idempotent Consumer EIP ({@code idempotentConsumer(header("JMSMessageID"), repository)}, its
     * defaults: eager, skip duplicates, remove the key on failure) on a camel-jms route over a Qpid JMS connection
     * factory, which is what camel-amqp is; {@code concurrentConsumers} consumer threads, each prefetching
     * {@code creditPerConsumer}.
     *
     * @param uriOptions further endpoint options, appended as given ("" for none)
     * @param postgres the server behind {@code repository}, whose CPU is counted, or null
     */
    static Sample camel(String host, int port, String queue, int n, int threads, int creditPerConsumer,
                        IdempotentRepository repository, String uriOptions, ProcessHandle broker,
                        BenchEnv.StoreServer postgres, String mode) throws Exception {
        CountDownLatch done = new CountDownLatch(n);
        // camel-amqp's AMQPComponent.amqpComponent(uri) is this connection factory on a JmsComponent
        JmsConnectionFactory connectionFactory = new JmsConnectionFactory(
                "amqp://" + host + ":" + port + "?jms.prefetchPolicy.all=" + creditPerConsumer);
        connectionFactory.setTopicPrefix("topic://");
        DefaultCamelContext context = new DefaultCamelContext();
        try {
            JmsComponent amqp = new JmsComponent();
            amqp.setConnectionFactory(connectionFactory);
            context.addComponent("amqp", amqp);
            String uri = "amqp:queue:" + queue + "?concurrentConsumers=" + threads
                    + (uriOptions.isEmpty() ? "" : "&" + uriOptions);
            context.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from(uri).routeId("bench").autoStartup(false)
                            .idempotentConsumer(header("JMSMessageID"), repository)
                            .process(exchange -> done.countDown());
                }
            });
            context.start();
            Sample.Meter meter = Sample.Meter.start(broker, postgres);
            context.getRouteController().startRoute("bench");
            EndToEndBenchmark.awaitAll(done, mode, n);
            return meter.stop(mode, threads, n);
        } finally {
            context.stop();
        }
    }

}
