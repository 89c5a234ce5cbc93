package org.acemq.amqp.testinfra.rabbitmq;

import java.util.List;

/**
 * The dead-letter set-up every test RabbitMQ gets, the way an operator would configure it: a policy that gives every
 * queue named {@value #QUEUE_PREFIX}… the dead-letter exchange {@value #EXCHANGE}. A dead-lettered message keeps its
 * routing key (the queue name, for messages sent to a queue address), and {@link RabbitMq#declareQueue} binds a queue
 * {@value #DLQ_PREFIX}&lt;queue&gt; to that exchange with the queue's name, so each queue has a dead-letter queue of
 * its own.
 */
final class DeadLettering {

    /** Only queues whose names start with this are covered by the policy. */
    static final String QUEUE_PREFIX = "interop.";
    /** The policy's name. */
    static final String POLICY = "acemq-interop-dead-lettering";
    /** The dead-letter exchange (direct, durable). */
    static final String EXCHANGE = "acemq.interop.dlx";
    /** Prefix of each queue's dead-letter queue (not matched by the policy). */
    static final String DLQ_PREFIX = "dlq.";

    private static final String PATTERN = "^interop\\.";
    private static final String DEFINITION = "{\"dead-letter-exchange\":\"" + EXCHANGE + "\"}";

    private DeadLettering() {
    }

    /**
     * The policy as definitions JSON, imported by a node at boot ({@code load_definitions}). A node that imports
     * definitions at boot does not create its default vhost and user, so they are part of it: vhost {@code /}, user
     * {@code guest}/{@code guest} with all permissions (the node lets it in from loopback only).
     */
    static String definitionsJson() {
        return "{\"vhosts\":[{\"name\":\"/\"}],\n"
                + " \"users\":[{\"name\":\"guest\",\"password\":\"guest\",\"tags\":\"administrator\"}],\n"
                + " \"permissions\":[{\"user\":\"guest\",\"vhost\":\"/\",\"configure\":\".*\",\"write\":\".*\","
                + "\"read\":\".*\"}],\n"
                + " \"policies\":[{\"vhost\":\"/\",\"name\":\"" + POLICY + "\",\"pattern\":\""
                + PATTERN.replace("\\", "\\\\") + "\",\"apply-to\":\"queues\",\"priority\":0,\"definition\":"
                + DEFINITION + "}]}\n";
    }

    /** The policy as {@code rabbitmqctl} arguments. */
    static List<String> setPolicyArguments() {
        return List.of("set_policy", "--apply-to", "queues", POLICY, PATTERN, DEFINITION);
    }
}
