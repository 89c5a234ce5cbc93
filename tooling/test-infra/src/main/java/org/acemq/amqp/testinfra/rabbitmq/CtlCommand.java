package org.acemq.amqp.testinfra.rabbitmq;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Control of a broker the tests were given ({@value RabbitMqProvider#URL_ENV}) through the command named by
 * {@value RabbitMqProvider#CTL_ENV}, which runs {@code rabbitmqctl} on that broker (for example
 * {@code docker exec my-rabbit rabbitmqctl}). It sets the dead-letter policy, and restarts the broker with
 * {@code stop_app} / {@code start_app}: every connection is closed and every queue is stopped and recovered from disk,
 * which is what a client sees of a broker restart. Closing it leaves the broker running.
 */
final class CtlCommand implements BrokerControl {

    private static final Duration TIMEOUT = Duration.ofSeconds(120);

    private final String command;

    CtlCommand(String command) {
        this.command = command;
    }

    /** Runs {@code <command> set_policy …} for the dead-letter policy. */
    void setDeadLetterPolicy() {
        run(DeadLettering.setPolicyArguments());
    }

    @Override
    public void restart() {
        run(List.of("stop_app"));
        run(List.of("start_app"));
        run(List.of("await_startup"));
    }

    @Override
    public Path logFile() {
        return null;
    }

    @Override
    public void close() {
        // not ours to stop
    }

    private void run(List<String> arguments) {
        List<String> argv = new ArrayList<>(List.of("sh", "-c", command + " \"$@\"", "rabbitmqctl"));
        argv.addAll(arguments);
        try {
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
            p.getOutputStream().close();
            if (!p.waitFor(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(describe(arguments) + " did not finish within " + TIMEOUT.toSeconds()
                        + " s");
            }
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new IllegalStateException(describe(arguments) + " failed with exit code " + p.exitValue() + ": "
                        + output.strip());
            }
        } catch (IOException e) {
            throw new IllegalStateException(describe(arguments) + " could not be run: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(describe(arguments) + " was interrupted", e);
        }
    }

    private String describe(List<String> arguments) {
        return RabbitMqProvider.CTL_ENV + " '" + command + "' " + String.join(" ", arguments);
    }
}
