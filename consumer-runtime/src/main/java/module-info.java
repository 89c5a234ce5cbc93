/**
 * The AceMQ consumer runtime: consumes AMQP 1.0 messages with Apache Qpid protonj2, routes every delivery through an
 * {@link org.acemq.amqp.api.IdempotencyStore}, and settles it with the right outcome.
 */
module org.acemq.amqp.consumer {
    requires transitive org.acemq.amqp.api;
    requires org.apache.qpid.protonj2.client;
    requires org.apache.qpid.protonj2;
    requires org.slf4j;
    requires static micrometer.core;
    requires static micrometer.observation;
    requires static micrometer.commons;

    exports org.acemq.amqp.consumer;
    exports org.acemq.amqp.consumer.micrometer;
}
