package org.acemq.amqp.consumer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** The project's own files, for tests that keep documentation and code in agreement. */
public final class ProjectFiles {

    private ProjectFiles() {
    }

    /** @return the project root (the folder holding {@code consumer-runtime/} and the parent {@code pom.xml}) */
    public static Path root() {
        Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        for (Path p = dir; p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("consumer-runtime")) && Files.isRegularFile(p.resolve("pom.xml"))) {
                return p;
            }
        }
        throw new IllegalStateException("project root not found above " + dir);
    }

    /** @return the lines of the project's README.md */
    public static List<String> readme() throws IOException {
        return Files.readAllLines(root().resolve("README.md"));
    }
}
