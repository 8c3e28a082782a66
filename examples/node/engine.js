#!/usr/bin/env node
// A long nardy engine in Node.js, written from proto/nardy/v1/*.proto and docs/PROTOCOL.md
// alone: @grpc/grpc-js for the transport, @grpc/proto-loader to read the .proto files at
// run time (no generated code). It plays a random legal play on every turn.
//
// Launched like any engine: the launcher sets NARDY_SERVER (host:port) and NARDY_TOKEN (a
// player or seat token), e.g.
//   nardy ladder --engine js="node examples/node/engine.js" --engine greedy="nardy engine greedy"
//   nardy check-engine -- node examples/node/engine.js
// Optional: NARDY_TLS_CA (a PEM file: connect with TLS, trusting that root), NARDY_TLS=1
// (TLS with the system roots), NARDY_PROTO_DIR (where nardy/v1/*.proto live; default the
// repository's proto/), NARDY_SEED (makes the engine's choices repeatable).
//
// The life of the bot (docs/PROTOCOL.md):
//   SubscribePlayer -> GAME_ASSIGNED -> SubscribeGame(game_id) with the token and
//   filter EVENT_FILTER_OWN_TURNS (only the events a seat needs to play: one message per
//   turn of ours, none for the opponent's) -> on every event whose state carries legal
//   plays (our turn, waiting), answer that turn_id once with SubmitPlay(end_position) ->
//   until GAME_FINISHED / GAME_ABORTED.
//   A dropped stream or SERVER_SHUTDOWN: subscribe again after a pause with after_seq =
//   the largest seq seen; the arbiter announces a waiting turn again.
"use strict";

const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PROTO_DIR = process.env.NARDY_PROTO_DIR || path.join(__dirname, "..", "..", "proto");
const SERVER = process.env.NARDY_SERVER || "127.0.0.1:50051";
const TOKEN = process.env.NARDY_TOKEN || "";
const CALL_DEADLINE_MS = 10_000;
const MAX_BACKOFF_MS = 5_000;
// Worth another try: the server is restarting or briefly unreachable, or we were too fast.
const RETRYABLE = new Set([
  grpc.status.UNAVAILABLE,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.CANCELLED,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.INTERNAL,
  grpc.status.UNKNOWN,
]);

function log(...parts) {
  process.stderr.write(`node-engine: ${parts.join(" ")}\n`);
}

// -- a repeatable random choice (NARDY_SEED), else the system's ---------------------------
let seed = process.env.NARDY_SEED ? Number(process.env.NARDY_SEED) >>> 0 : null;
function randomIndex(n) {
  if (seed === null) return crypto.randomInt(n);
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0; // a small LCG is enough here
  return seed % n;
}

// -- the contract, loaded from the .proto files at run time --------------------------------
const definition = protoLoader.loadSync(["nardy/v1/arbiter.proto"], {
  includeDirs: [PROTO_DIR],
  keepCase: true, // field names as in the .proto: legal_plays, turn_id, your_color
  longs: Number, // seq and turn_id are uint64; a game's counts fit a double
  enums: String, // enum values by name: "EVENT_TYPE_TURN_STARTED"
  defaults: true, // unset fields read as their zero values, as in proto3
  oneofs: true,
});
const nardy = grpc.loadPackageDefinition(definition).nardy.v1;

function credentials() {
  if (process.env.NARDY_TLS_CA) {
    return grpc.credentials.createSsl(fs.readFileSync(process.env.NARDY_TLS_CA));
  }
  if (["1", "true", "yes", "on"].includes((process.env.NARDY_TLS || "").toLowerCase())) {
    return grpc.credentials.createSsl();
  }
  return grpc.credentials.createInsecure();
}

const arbiter = new nardy.ArbiterService(SERVER, credentials(), {
  "grpc.keepalive_time_ms": 10_000, // notice a dead connection within seconds
  "grpc.keepalive_timeout_ms": 5_000,
  "grpc.keepalive_permit_without_calls": 1,
});

function metadata() {
  const md = new grpc.Metadata();
  md.set("authorization", `Bearer ${TOKEN}`);
  return md;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function unary(method, request) {
  return new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + CALL_DEADLINE_MS);
    arbiter[method](request, metadata(), { deadline }, (err, response) =>
      err ? reject(err) : resolve(response),
    );
  });
}

// -- playing ------------------------------------------------------------------------------
function myTurn(state) {
  return (
    state.status === "GAME_STATUS_IN_PROGRESS" &&
    state.legal_plays.length > 0 &&
    state.side_to_move === state.your_color
  );
}

function choose(state) {
  return state.legal_plays[randomIndex(state.legal_plays.length)];
}

// Submit a play for a turn; plays are idempotent, so a failure in transit is simply sent
// again. Returns true once the arbiter has it, false when it refuses the turn for good.
async function submit(gameId, turnId, play) {
  let backoff = 100;
  for (let attempt = 1; attempt <= 6; attempt++) {
    try {
      const answer = await unary("SubmitPlay", {
        game_id: gameId,
        turn_id: turnId,
        end_position: play.end_position,
      });
      log(`game ${gameId} turn ${turnId}: played ${answer.notation} (${answer.used_ms} ms)`);
      return true;
    } catch (err) {
      if (!RETRYABLE.has(err.code)) {
        // FAILED_PRECONDITION: the turn is over (timed out, or already played): move on.
        log(`game ${gameId} turn ${turnId}: refused: ${err.details || err.message}`);
        return false;
      }
      await sleep(backoff);
      backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
    }
  }
  return false;
}

// Follow one game to its end. Resolves with the last state seen.
async function playGame(gameId) {
  let lastSeq = 0;
  let answered = 0; // the last turn_id this seat has answered
  let backoff = 100;
  let state = null;
  // A fresh random client seed per game: our contribution to the provably fair dice.
  const clientSeed = crypto.randomBytes(16).toString("hex");
  for (;;) {
    const outcome = await new Promise((resolve) => {
      const stream = arbiter.SubscribeGame(
        {
          game_id: gameId,
          after_seq: lastSeq, // seqs have gaps on a filtered stream: resume still works
          client_seed: clientSeed,
          filter: "EVENT_FILTER_OWN_TURNS",
        },
        metadata(),
      );
      let ended = false;
      stream.on("data", (event) => {
        backoff = 100;
        lastSeq = Math.max(lastSeq, Number(event.seq));
        state = event.state;
        if (event.type === "EVENT_TYPE_GAME_FINISHED" || event.type === "EVENT_TYPE_GAME_ABORTED") {
          ended = true;
          return;
        }
        if (event.type === "EVENT_TYPE_SERVER_SHUTDOWN") return; // the stream ends next
        const turnId = Number(state.turn_id);
        if (myTurn(state) && turnId > answered) {
          answered = turnId;
          submit(gameId, turnId, choose(state)).then((ok) => {
            if (!ok) stream.cancel(); // refused for good: look again from a fresh snapshot
          });
        }
      });
      stream.on("error", (err) => resolve({ ended, err }));
      stream.on("end", () => resolve({ ended, err: null }));
    });
    if (outcome.ended) return state;
    if (outcome.err && !RETRYABLE.has(outcome.err.code)) {
      log(`game ${gameId}: ${outcome.err.details || outcome.err.message}; giving it up`);
      return state;
    }
    await sleep(backoff);
    backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
  }
}

// Follow the player stream forever: every announced game is played concurrently.
async function main() {
  if (!TOKEN) {
    log("NARDY_TOKEN is not set: the launcher gives the engine its token");
    process.exit(2);
  }
  const games = new Set();
  let backoff = 100;
  for (;;) {
    const err = await new Promise((resolve) => {
      const stream = arbiter.SubscribePlayer({}, metadata());
      stream.on("data", (event) => {
        backoff = 100;
        if (event.type === "PLAYER_EVENT_TYPE_GAME_ASSIGNED" && !games.has(event.game_id)) {
          games.add(event.game_id);
          log(`game ${event.game_id} against ${event.opponent ? event.opponent.name : "?"}`);
          playGame(event.game_id).then((state) => {
            const r = state && state.result;
            log(`game ${event.game_id} over: ${r ? `${r.winner} ${r.kind} ${r.termination}` : "no result"}`);
          });
        }
      });
      stream.on("error", resolve);
      stream.on("end", () => resolve(null));
    });
    if (err && !RETRYABLE.has(err.code)) {
      log(`player stream refused: ${err.details || err.message}`);
      process.exit(1);
    }
    await sleep(backoff);
    backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
  }
}

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    arbiter.close();
    process.exit(0);
  });
}

main();
