/** The reward model: hashed trajectory features, a logistic model trained on verified outcomes, its file, verifier and HTTP client. */
export * from "./features.js";
export * from "./metrics.js";
export * from "./file.js";
export { MAX_TRAIN_EPISODES, MAX_TRAIN_EPOCHS, scoreEpisode, scoreVector, trainRewardModel, verifiedLabel, type TrainRewardModelOptions } from "./model.js";
export * from "./verifier.js";
export * from "./http.js";
