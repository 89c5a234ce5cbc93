package org.acemq.amqp.reliability;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * One consumer position of a harness: a JVM ({@code java -cp <this JVM's class path> <main> <args>}) that is started
 * again, as a new incarnation ({@code c2.0}, {@code c2.1}, ...), whenever it dies while the harness runs. Each
 * incarnation logs to {@code consumer-<incarnation>.log} in the work directory and counts as started once it printed
 * {@code STARTED <incarnation>}. Used by {@link ReliabilityHarness} (one queue, N consumers) and {@link ChainHarness}
 * (two services, two consumers each).
 */
final class ConsumerProcess {

    private final String name;
    private final Path workDir;
    private final Function<String, List<String>> program;
    private final Consumer<String> note;
    private final BooleanSupplier stopping;
    private final Consumer<String> died;
    volatile Process process;
    volatile String currentId;
    volatile boolean started;
    /** Set while the harness holds the process stopped (SIGSTOP), so that it is not taken for a self-paused one. */
    volatile boolean pausedByHarness;
    private int incarnation;

    /**
     * @param name the position's name, e.g. {@code c1}; incarnations are {@code <name>.<n>}
     * @param workDir where the logs go
     * @param program the main class and its arguments for an incarnation id
     * @param note the harness's log
     * @param stopping true once the harness stops its consumers (a death is then not restarted)
     * @param died told the incarnation id of each consumer that died while the harness ran
     */
    ConsumerProcess(String name, Path workDir, Function<String, List<String>> program, Consumer<String> note,
            BooleanSupplier stopping, Consumer<String> died) {
        this.name = name;
        this.workDir = workDir;
        this.program = program;
        this.note = note;
        this.stopping = stopping;
        this.died = died;
    }

    /** Starts the first incarnation and the monitor that restarts it. */
    void start() throws IOException {
        launch();
        Thread monitor = new Thread(this::monitorLoop, "slot-" + name);
        monitor.setDaemon(true);
        monitor.start();
    }

    private synchronized void launch() throws IOException {
        currentId = name + "." + incarnation;
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx256m", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1", "-Xshare:auto",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                "-Dorg.slf4j.simpleLogger.log.com.zaxxer.hikari=warn",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                "-cp", System.getProperty("java.class.path")));
        cmd.addAll(program.apply(currentId));
        File logFile = workDir.resolve("consumer-" + currentId + ".log").toFile();
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile));
        process = pb.start();
        String id = currentId;
        Process p = process;
        Thread watcher = new Thread(() -> {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (p.isAlive() && System.nanoTime() < deadline) {
                try {
                    if (Files.readString(logFile.toPath()).contains("STARTED " + id)) {
                        started = true;
                        return;
                    }
                    Thread.sleep(50);
                } catch (IOException | InterruptedException e) {
                    return;
                }
            }
        }, "watch-" + id);
        watcher.setDaemon(true);
        watcher.start();
    }

    private void monitorLoop() {
        while (true) {
            Process p = process;
            int code;
            try {
                code = p.waitFor();
            } catch (InterruptedException e) {
                return;
            }
            if (stopping.getAsBoolean()) {
                return;
            }
            died.accept(currentId);
            note.accept("consumer " + currentId + " exited with " + code + "; restarting");
            incarnation++;
            try {
                launch();
            } catch (IOException e) {
                note.accept("cannot restart consumer " + name + ": " + e);
                return;
            }
        }
    }

    /** SIGKILL ({@link Process#destroyForcibly()} on Linux); the monitor starts the next incarnation. */
    void kill9() {
        Process p = process;
        note.accept("kill -9 " + currentId + " (pid " + p.pid() + ")");
        p.destroyForcibly();
    }

    /** Sends a signal with {@code kill -<sig>}. */
    void signal(String sig) throws IOException, InterruptedException {
        Process p = process;
        note.accept("kill -" + sig + " " + currentId + " (pid " + p.pid() + ")");
        new ProcessBuilder("kill", "-" + sig, String.valueOf(p.pid())).inheritIO().start().waitFor();
    }

    /** Graceful stop (SIGTERM: the consumer's shutdown hook closes it), SIGKILL after 20 s. */
    void stop() throws InterruptedException {
        stopAll(List.of(this));
    }

    /**
     * Graceful stop of several consumers at once: SIGTERM to every one first, so that they close side by side, then
     * waits for each; one still running 20 s after its signal gets SIGKILL.
     */
    static void stopAll(List<ConsumerProcess> consumers) throws InterruptedException {
        List<Process> signalled = new ArrayList<>(consumers.size());
        for (ConsumerProcess c : consumers) {
            Process p = c.process;
            p.destroy();
            signalled.add(p);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        for (int i = 0; i < consumers.size(); i++) {
            Process p = signalled.get(i);
            if (!p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                consumers.get(i).note.accept("consumer " + consumers.get(i).currentId
                        + " did not stop within 20 s; killing it");
                p.destroyForcibly();
                p.waitFor();
            }
        }
    }

    /** SIGKILL if alive, for the harness's clean-up. */
    void kill() {
        Process p = process;
        if (p != null && p.isAlive()) {
            p.destroyForcibly();
        }
    }
}
