/**
 * The AceMQ consumer API: the idempotency store contract and the few types a message handler author needs.
 * Depends on nothing but the JDK.
 */
module org.acemq.amqp.api {
    exports org.acemq.amqp.api;
}
