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
// repository's proto/), NARDY_SEED (makes the engine's choices repeatable). The flag
// --unary plays over SubscribeGame and SubmitPlay instead of the Play stream.
//
// The life of the bot (docs/PROTOCOL.md):
//   SubscribePlayer -> GAME_ASSIGNED -> for each game, one Play stream with the token:
//   first PlayRequest{subscribe: {game_id, after_seq, client_seed}}; then the stream sends
//   our own turns only (one message per turn of ours, none for the opponent's). On every
//   event whose state carries legal plays (our turn, waiting) we answer that turn_id once
//   with PlayRequest{play: {turn_id, end_position}} on the same stream; each play is
//   answered in order by `played` or `refused` -> until GAME_FINISHED / GAME_ABORTED.
//   A server that answers Play with UNIMPLEMENTED (behind a front), or --unary: the same
//   game over SubscribeGame(game_id, filter EVENT_FILTER_OWN_TURNS) and one
//   SubmitPlay(end_position) call per turn.
//   A dropped stream or SERVER_SHUTDOWN: open it again after a pause with after_seq = the
//   largest seq seen; the arbiter announces a waiting turn again. A play sent on Play and
//   not answered is sent again on the new stream (plays are idempotent).
"use strict";

const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PROTO_DIR = process.env.NARDY_PROTO_DIR || path.join(__dirname, "..", "..", "proto");
const SERVER = process.env.NARDY_SERVER || "127.0.0.1:50051";
const TOKEN = process.env.NARDY_TOKEN || "";
const UNARY = process.argv.slice(2).includes("--unary");
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

// What a game's loop knows, whichever way it plays: the largest seq seen, the last turn
// answered, the latest state, and (on Play) the plays sent and not yet answered, in order.
function newGame(gameId) {
  return {
    gameId,
    clientSeed: crypto.randomBytes(16).toString("hex"), // our share of the fair dice
    lastSeq: 0,
    answered: 0,
    state: null,
    unanswered: [],
  };
}

const isEnd = (event) =>
  event.type === "EVENT_TYPE_GAME_FINISHED" || event.type === "EVENT_TYPE_GAME_ABORTED";

let playOffered = !UNARY; // false once a server answered Play with UNIMPLEMENTED

// Follow one game to its end. Resolves with the last state seen.
async function playGame(gameId) {
  const game = newGame(gameId);
  log(`game ${gameId}: over ${playOffered ? "the Play stream" : "SubscribeGame and SubmitPlay"}`);
  if (playOffered) {
    const outcome = await overPlay(game);
    if (outcome !== "unimplemented") return game.state;
    playOffered = false;
    log(`game ${gameId}: the arbiter does not offer Play; SubscribeGame and SubmitPlay instead`);
  }
  return overUnary(game);
}

// The game over Play streams, opened again after drops. Resolves with "over" (the game
// ended, or was given up) or "unimplemented" (the server does not offer Play).
async function overPlay(game) {
  let backoff = 100;
  for (;;) {
    const outcome = await new Promise((resolve) => {
      const call = arbiter.Play(metadata());
      let open = true;
      let ended = false;
      const send = (play) => open && call.write({ play });
      call.write({
        subscribe: { game_id: game.gameId, after_seq: game.lastSeq, client_seed: game.clientSeed },
      });
      game.unanswered.forEach(send); // sent before the drop, never answered: again
      call.on("data", (response) => {
        backoff = 100;
        if (response.kind === "event") {
          const event = response.event;
          game.lastSeq = Math.max(game.lastSeq, Number(event.seq));
          game.state = event.state;
          if (isEnd(event)) {
            ended = true;
            return;
          }
          const turnId = Number(event.state.turn_id);
          const waiting = game.unanswered.some((p) => p.turn_id === turnId);
          if (myTurn(event.state) && turnId > game.answered && !waiting) {
            const play = { turn_id: turnId, end_position: choose(event.state).end_position };
            game.unanswered.push(play);
            send(play);
          }
          return;
        }
        const play = game.unanswered.shift(); // answers come in the order of the plays
        if (!play) return;
        if (response.kind === "played") {
          game.answered = Math.max(game.answered, play.turn_id);
          const p = response.played;
          const again = p.duplicate ? ", a duplicate" : "";
          const turn = `game ${game.gameId} turn ${play.turn_id}`;
          log(`${turn}: played ${p.notation} (${p.used_ms} ms${again})`);
        } else if (RETRYABLE.has(response.refused.code)) {
          game.unanswered.unshift(play); // too fast, or not stored: again after a pause
          setTimeout(() => send(play), 200);
        } else {
          // FAILED_PRECONDITION: the turn is over (timed out, or already played): move on.
          game.answered = Math.max(game.answered, play.turn_id);
          log(`game ${game.gameId} turn ${play.turn_id}: refused: ${response.refused.message}`);
        }
      });
      const done = (err) => {
        if (!open) return;
        open = false;
        call.end();
        resolve({ ended, err });
      };
      call.on("error", done);
      call.on("end", () => done(null));
    });
    if (outcome.ended) return "over";
    if (outcome.err && outcome.err.code === grpc.status.UNIMPLEMENTED) return "unimplemented";
    if (outcome.err && !RETRYABLE.has(outcome.err.code)) {
      log(`game ${game.gameId}: ${outcome.err.details || outcome.err.message}; giving it up`);
      return "over";
    }
    await sleep(backoff);
    backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
  }
}

// The game over SubscribeGame and a SubmitPlay call per turn. Resolves with the last state.
async function overUnary(game) {
  const gameId = game.gameId;
  let backoff = 100;
  for (;;) {
    const outcome = await new Promise((resolve) => {
      const stream = arbiter.SubscribeGame(
        {
          game_id: gameId,
          after_seq: game.lastSeq, // seqs have gaps on a filtered stream: resume still works
          client_seed: game.clientSeed,
          filter: "EVENT_FILTER_OWN_TURNS",
        },
        metadata(),
      );
      let ended = false;
      stream.on("data", (event) => {
        backoff = 100;
        game.lastSeq = Math.max(game.lastSeq, Number(event.seq));
        game.state = event.state;
        if (isEnd(event)) {
          ended = true;
          return;
        }
        if (event.type === "EVENT_TYPE_SERVER_SHUTDOWN") return; // the stream ends next
        const turnId = Number(event.state.turn_id);
        if (myTurn(event.state) && turnId > game.answered) {
          game.answered = turnId;
          submit(gameId, turnId, choose(event.state)).then((ok) => {
            if (!ok) stream.cancel(); // refused for good: look again from a fresh snapshot
          });
        }
      });
      stream.on("error", (err) => resolve({ ended, err }));
      stream.on("end", () => resolve({ ended, err: null }));
    });
    if (outcome.ended) return game.state;
    if (outcome.err && !RETRYABLE.has(outcome.err.code)) {
      log(`game ${gameId}: ${outcome.err.details || outcome.err.message}; giving it up`);
      return game.state;
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
