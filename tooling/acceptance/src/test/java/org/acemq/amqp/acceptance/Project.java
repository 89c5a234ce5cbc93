package org.acemq.amqp.acceptance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The source tree as the checks see it: its root, files in it, and the modules the root POM publishes. */
final class Project {

    private static final Pattern MODULE = Pattern.compile("<module>([^<]+)</module>");
    private static final Pattern ARTIFACT_ID = Pattern.compile("<artifactId>([^<]+)</artifactId>");
    private static final Pattern PACKAGING = Pattern.compile("<packaging>([^<]+)</packaging>");

    /** A module of the root reactor that is published: its directory, artifactId and packaging. */
    record Module(Path dir, String artifactId, String packaging) {
        boolean isJar() {
            return packaging.equals("jar");
        }
    }

    private Project() {
    }

    /** @return the directory that holds the root pom.xml and README.md, found upwards from the working directory */
    static Path root() {
        Path start = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        for (Path p = start; p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("pom.xml")) && Files.isRegularFile(p.resolve("README.md"))
                    && Files.isDirectory(p.resolve("tooling")) && Files.isDirectory(p.resolve("samples"))) {
                return p;
            }
        }
        throw new IllegalStateException("project root (pom.xml, README.md, tooling/, samples/) not found above " + start);
    }

    static Path file(String relative) {
        return root().resolve(relative);
    }

    static String read(String relative) {
        try {
            return Files.readString(file(relative));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + relative, e);
        }
    }

    /** @return the project version Maven built, passed to the tests by the POM */
    static String version() {
        String version = System.getProperty("acemq.version");
        if (version == null || version.isBlank()) {
            throw new IllegalStateException("system property acemq.version is not set (run through Maven)");
        }
        return version;
    }

    /** The root POM's modules whose own modules are never published: the samples and the project's tooling. */
    static final List<String> UNPUBLISHED_PARENTS = List.of("samples", "tooling");

    /**
     * The published modules: every module the root POM lists except {@link #UNPUBLISHED_PARENTS} (whose modules are
     * never published). Their POMs are read as text: artifactId is the first one after the parent block.
     *
     * @return the modules, in the root POM's order
     */
    static List<Module> publishedModules() {
        String rootPom = read("pom.xml");
        List<Module> modules = new ArrayList<>();
        Matcher m = MODULE.matcher(rootPom);
        while (m.find()) {
            String name = m.group(1).trim();
            if (UNPUBLISHED_PARENTS.contains(name)) {
                continue;
            }
            Path dir = root().resolve(name);
            String pom = readPom(dir);
            modules.add(new Module(dir, artifactId(pom), packaging(pom)));
        }
        return modules;
    }

    /**
     * @param artifactId a module under samples/pom.xml or tooling/pom.xml
     * @return its directory, wherever its parent POM says it is
     */
    static Path unpublishedModule(String artifactId) {
        for (String parent : UNPUBLISHED_PARENTS) {
            Path parentDir = root().resolve(parent);
            Matcher m = MODULE.matcher(read(parent + "/pom.xml"));
            while (m.find()) {
                Path dir = parentDir.resolve(m.group(1).trim()).normalize();
                if (artifactId(readPom(dir)).equals(artifactId)) {
                    return dir;
                }
            }
        }
        throw new IllegalStateException(artifactId + " is not a module of " + UNPUBLISHED_PARENTS);
    }

    static String readPom(Path moduleDir) {
        try {
            return Files.readString(moduleDir.resolve("pom.xml"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + moduleDir.resolve("pom.xml"), e);
        }
    }

    static String artifactId(String pom) {
        String withoutParent = pom.replaceAll("(?s)<parent>.*?</parent>", "");
        Matcher m = ARTIFACT_ID.matcher(withoutParent);
        if (!m.find()) {
            throw new IllegalStateException("no artifactId in POM");
        }
        return m.group(1).trim();
    }

    private static String packaging(String pom) {
        String withoutParent = pom.replaceAll("(?s)<parent>.*?</parent>", "")
                .replaceAll("(?s)<dependencies>.*?</dependencies>", "")
                .replaceAll("(?s)<build>.*?</build>", "");
        Matcher m = PACKAGING.matcher(withoutParent);
        return m.find() ? m.group(1).trim() : "jar";
    }
}
