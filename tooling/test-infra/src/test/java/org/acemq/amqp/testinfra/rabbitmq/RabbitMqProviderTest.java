package org.acemq.amqp.testinfra.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How the provider reads its environment, without a broker. */
class RabbitMqProviderTest {

    @Test
    void anUnsetUrlIsSkippedInAutoModeAndReportedWhenRequired() {
        List<String> tried = new ArrayList<>();
        assertThat(RabbitMqProvider.fromEnvironment(Map.of(), tried, false)).isNull();
        assertThat(tried).isEmpty();
        assertThat(RabbitMqProvider.fromEnvironment(Map.of(), tried, true)).isNull();
        assertThat(tried).singleElement().asString().contains(RabbitMqProvider.URL_ENV + " is not set");
    }

    @Test
    void aUrlThatIsNotAmqpIsAnErrorNotAFallBack() {
        assertThatThrownBy(() -> RabbitMqProvider.fromEnvironment(
                Map.of(RabbitMqProvider.URL_ENV, "http://localhost:15672", RabbitMqProvider.CTL_ENV, "rabbitmqctl"),
                new ArrayList<>(), false))
                .isInstanceOf(RabbitMqUnavailableException.class)
                .hasMessageContaining(RabbitMqProvider.URL_ENV + " must look like amqp://host:5672")
                .hasMessageContaining("http://localhost:15672");
    }

    @Test
    void aUrlWithoutAControlCommandSaysWhatIsMissing() {
        assertThatThrownBy(() -> RabbitMqProvider.fromEnvironment(
                Map.of(RabbitMqProvider.URL_ENV, "amqp://localhost:5672"), new ArrayList<>(), false))
                .isInstanceOf(RabbitMqUnavailableException.class)
                .hasMessageContaining(RabbitMqProvider.CTL_ENV + " is not")
                .hasMessageContaining("docker exec");
    }

    @Test
    void anUnknownModeIsRejectedWithTheValidOnes() {
        assertThatThrownBy(() -> RabbitMqProvider.locate(Map.of(RabbitMqProvider.MODE_ENV, "podman")))
                .isInstanceOf(RabbitMqUnavailableException.class)
                .hasMessageContaining("must be one of auto, env, testcontainers, local, but was 'podman'");
    }

    @Test
    void theHowToNamesEveryWayToProvideABroker() {
        assertThat(RabbitMqUnavailableException.HOW_TO_PROVIDE)
                .contains("apt-get install -y rabbitmq-server", RabbitMqProvider.DOCKER_IMAGE,
                        RabbitMqProvider.URL_ENV, RabbitMqProvider.CTL_ENV);
    }

    @Test
    void theDeadLetterPolicyCoversTheTestQueuesOnly() {
        assertThat(DeadLettering.definitionsJson()).contains("\"pattern\":\"^interop\\\\.\"")
                .contains("\"dead-letter-exchange\":\"" + DeadLettering.EXCHANGE + "\"");
        assertThat("interop.x".matches("^interop\\..*")).isTrue();
        assertThat(RabbitMq.deadLetterQueueName("interop.x")).doesNotStartWith(DeadLettering.QUEUE_PREFIX);
    }
}
