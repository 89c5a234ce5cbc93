package org.acemq.amqp.store.redis.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** One of the store's Lua scripts: its text (a resource next to this class) and the SHA-1 that EVALSHA names it by. */
public final class RedisScript {

    /** Claims keys in order; see acquire.lua. */
    public static final RedisScript ACQUIRE = load("acquire");
    /** Confirms keys in order; see confirm.lua. */
    public static final RedisScript CONFIRM = load("confirm");
    /** Releases this owner's claims in order; see release.lua. */
    public static final RedisScript RELEASE = load("release");
    /** Takes back claims a failed batch made, without counting them as attempts; see unclaim.lua. */
    public static final RedisScript UNCLAIM = load("unclaim");
    /** Extends one lease; see renew.lua. */
    public static final RedisScript RENEW = load("renew");
    /** Reads one record's state and attempt; see read.lua. */
    public static final RedisScript READ = load("read");
    /** Forgets one idle record; see reset.lua. */
    public static final RedisScript RESET = load("reset");
    /** Writes records moved from the first key layout; see migrate.lua. */
    public static final RedisScript MIGRATE = load("migrate");

    private final String name;
    private final String text;
    private final String sha;

    private RedisScript(String name, String text) {
        this.name = name;
        this.text = text;
        this.sha = sha1(text);
    }

    /** @return the script's name (its resource's base name) */
    public String name() {
        return name;
    }

    /** @return the Lua source */
    public String text() {
        return text;
    }

    /** @return the lower-case hexadecimal SHA-1 of the source, as Redis names a cached script */
    public String sha() {
        return sha;
    }

    private static RedisScript load(String name) {
        String resource = name + ".lua";
        try (InputStream in = RedisScript.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("script resource missing from the jar: " + resource);
            }
            return new RedisScript(name, new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read script resource " + resource, e);
        }
    }

    private static String sha1(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1")
                    .digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-1 is required of every JVM", e);
        }
    }
}
