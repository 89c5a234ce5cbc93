package org.acemq.amqp.testinfra;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@link EmbeddedArtemisMain} in a separate JVM: READY line, AMQP reachable, SIGTERM stops it, journal survives. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class EmbeddedArtemisMainIT {

    private static final Pattern READY = Pattern.compile("READY port=(\\d+)");

    @Test
    void printsReadyServesAmqpAndStopsOnSigterm(@TempDir Path dataDir) throws Exception {
        // first run: send a durable message, then SIGTERM
        Launched first = launch(dataDir);
        try (AmqpTestClient c = AmqpTestClient.connect("127.0.0.1", first.port)) {
            c.send("separate", AmqpTestClient.message("sep-1", "across processes"));
        }
        first.terminate();
        assertThat(first.stdout()).containsExactly("READY port=" + first.port);

        // second run on the same data directory: the message is still there
        Launched second = launch(dataDir);
        try (AmqpTestClient c = AmqpTestClient.connect("127.0.0.1", second.port)) {
            List<ReceivedMessage> got = c.drain("separate");
            assertThat(got).extracting(ReceivedMessage::messageId).containsExactly("sep-1");
        } finally {
            second.terminate();
        }
    }

    private static Launched launch(Path dataDir) throws Exception {
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-cp", classpath,
                EmbeddedArtemisMain.class.getName(),
                "--port", "0", "--persistent", "true", "--data", dataDir.toString());
        pb.redirectError(ProcessBuilder.Redirect.DISCARD);
        Process p = pb.start();
        Launched l = new Launched(p);
        l.port = l.awaitReady();
        return l;
    }

    private static final class Launched {
        final Process process;
        final List<String> lines = new ArrayList<>();
        final CompletableFuture<Integer> ready = new CompletableFuture<>();
        final Thread reader;
        int port;

        Launched(Process process) {
            this.process = process;
            this.reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        synchronized (lines) {
                            lines.add(line);
                        }
                        Matcher m = READY.matcher(line);
                        if (m.matches()) {
                            ready.complete(Integer.parseInt(m.group(1)));
                        }
                    }
                } catch (Exception e) {
                    ready.completeExceptionally(e);
                }
                ready.completeExceptionally(new IllegalStateException("process ended without READY"));
            }, "broker-stdout");
            reader.setDaemon(true);
            reader.start();
        }

        int awaitReady() throws Exception {
            try {
                return ready.get(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                process.destroyForcibly();
                throw e;
            }
        }

        void terminate() throws Exception {
            process.destroy(); // SIGTERM on Linux
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("broker process did not stop on SIGTERM");
            }
            reader.join(5000);
            // 143 = 128 + SIGTERM: the JVM ran its shutdown hooks and exited
            assertThat(process.exitValue()).isEqualTo(143);
        }

        List<String> stdout() {
            synchronized (lines) {
                return new ArrayList<>(lines);
            }
        }
    }
}
