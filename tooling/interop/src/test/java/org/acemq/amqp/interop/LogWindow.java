package org.acemq.amqp.interop;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * The lines a log file gained after this window was opened that a filter calls problems. The suite's own log is the
 * slf4j-simple file the failsafe configuration names ({@code org.slf4j.simpleLogger.logFile}); a broker's log is
 * whatever file it writes.
 */
final class LogWindow {

    /** The system property slf4j-simple reads its log file from. */
    static final String SLF4J_FILE_PROPERTY = "org.slf4j.simpleLogger.logFile";

    /** A WARN or ERROR line of slf4j-simple from the consumer or the AMQP client. */
    static final Predicate<String> CONSUMER_PROBLEM =
            Pattern.compile("^\\S+ \\[[^\\]]*\\] (WARN|ERROR) (org\\.acemq|org\\.apache\\.qpid)").asPredicate();
    /** An ERROR line of slf4j-simple from the Artemis broker. */
    static final Predicate<String> ARTEMIS_ERROR =
            Pattern.compile("^\\S+ \\[[^\\]]*\\] ERROR org\\.apache\\.activemq").asPredicate();
    /** An error line of a RabbitMQ node's log (3.10 and 4.x format). */
    static final Predicate<String> RABBITMQ_ERROR = Pattern.compile("^\\S+ \\S+ \\[error\\] ").asPredicate();

    private final Path file;
    private final long offset;
    private final Predicate<String> problem;

    private LogWindow(Path file, Predicate<String> problem) {
        this.file = file;
        this.offset = file == null ? 0 : size(file);
        this.problem = problem;
    }

    /** A window on the suite's own slf4j log from now on; unavailable if no log file is configured. */
    static LogWindow suiteLog(Predicate<String> problem) {
        String name = System.getProperty(SLF4J_FILE_PROPERTY);
        boolean isFile = name != null && !name.equals("System.err") && !name.equals("System.out");
        return new LogWindow(isFile ? Path.of(name) : null, problem);
    }

    /** A window on {@code file} from now on; unavailable if {@code file} is null. */
    static LogWindow of(Path file, Predicate<String> problem) {
        return new LogWindow(file, problem);
    }

    /** @return whether there is a file to read */
    boolean available() {
        return file != null;
    }

    /** @return the problem lines written since the window was opened (empty if unavailable) */
    List<String> problems() {
        List<String> lines = new ArrayList<>();
        if (file == null) {
            return lines;
        }
        long size = size(file);
        if (size <= offset) {
            return lines;
        }
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "r")) {
            byte[] bytes = new byte[(int) Math.min(size - offset, 64L << 20)];
            raf.seek(offset);
            raf.readFully(bytes);
            for (String line : new String(bytes, StandardCharsets.UTF_8).split("\n")) {
                if (problem.test(line)) {
                    lines.add(line.length() > 400 ? line.substring(0, 400) + "…" : line);
                }
            }
        } catch (IOException e) {
            lines.add("(cannot read " + file + ": " + e + ")");
        }
        return lines;
    }

    @Override
    public String toString() {
        return file == null ? "(no log file)" : file.toString();
    }

    private static long size(Path file) {
        try {
            return Files.exists(file) ? Files.size(file) : 0;
        } catch (IOException e) {
            return 0;
        }
    }
}
