package org.acemq.amqp.acceptance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Finds the {@code prometheus} and {@code promtool} programs of the Debian package {@code prometheus} (or any
 * Prometheus 2.x on the PATH) and runs promtool. A missing program fails the check with a message saying how to
 * install it; the checks never skip.
 */
final class PrometheusTools {

    /** Environment variable naming a directory that holds {@code prometheus} and {@code promtool}. */
    static final String BIN_DIR_ENV = "ACEMQ_PROMETHEUS_BIN_DIR";

    static final String HOW_TO = "The monitoring checks run the real Prometheus. Install it:\n"
            + "  Debian/Ubuntu: apt-get update && apt-get install -y prometheus, then stop the service the package "
            + "starts (service prometheus stop, service prometheus-node-exporter stop); .ci/run does this;\n"
            + "  elsewhere: put prometheus and promtool (2.x, from prometheus.io) on the PATH, or set " + BIN_DIR_ENV
            + " to their directory.";

    private PrometheusTools() {
    }

    /**
     * @param program {@code prometheus} or {@code promtool}
     * @return its path
     * @throws AssertionError with {@link #HOW_TO} if it cannot be found
     */
    static Path require(String program) {
        List<Path> candidates = new ArrayList<>();
        String binDir = System.getenv(BIN_DIR_ENV);
        if (binDir != null && !binDir.isBlank()) {
            candidates.add(Path.of(binDir, program));
        }
        for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (!dir.isBlank()) {
                candidates.add(Path.of(dir, program));
            }
        }
        candidates.add(Path.of("/usr/bin", program));
        for (Path p : candidates) {
            if (Files.isRegularFile(p) && Files.isExecutable(p)) {
                return p;
            }
        }
        throw new AssertionError(program + " not found (looked in " + BIN_DIR_ENV + ", PATH, /usr/bin).\n" + HOW_TO);
    }

    /** What a finished command printed. */
    record Run(int exitCode, String output) {
    }

    /**
     * @param workDir the working directory
     * @param command the command line
     * @return its exit code and its stdout and stderr together
     */
    static Run run(Path workDir, String... command) {
        try {
            Path log = Files.createTempFile("acemq-promtool-", ".log");
            try {
                Process p = new ProcessBuilder(command).directory(workDir.toFile()).redirectErrorStream(true)
                        .redirectOutput(log.toFile()).start();
                if (!p.waitFor(120, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    throw new AssertionError(String.join(" ", command) + " did not finish within 120 s");
                }
                return new Run(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
            } finally {
                Files.deleteIfExists(log);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** @return a port of 127.0.0.1 that was free a moment ago (for a process that takes its port as an argument) */
    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
