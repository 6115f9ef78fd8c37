import CloakCore
import CloakCrypto
import CloakVault
import Testing

/// The contract every ``AliasStore`` backend must meet, written once and run against each one.
///
/// It lives in the test-support target so that a new store is one more test line. To add a
/// backend, add one parameterised test next to `SQLiteAliasStoreTests.sqliteStoreMeetsTheContract`:
///
/// ```swift
/// @Test(arguments: AliasStoreCompatSuite.Case.allCases)
/// func memoryStoreMeetsTheContract(_ c: AliasStoreCompatSuite.Case) throws {
///     let shared = MemoryAliasStore()
///     try AliasStoreCompatSuite(makeStore: { shared }, reopensSameData: false).run(c)
/// }
/// ```
///
/// Writes are made between `begin()` and `commit()` (and savepoints), as the vault's executor
/// makes them.
package struct AliasStoreCompatSuite {
    package enum Case: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case insertThenLookUpByAliasAndFingerprint
        case recordsWithoutFingerprintAreIndependent
        case aDuplicateAliasIsTakenAcrossRecords
        case addAliasAppendsToTheRecord
        case deleteAliasRemovesTheRecordWithItsLastAlias
        case setClassifiersReplacesThem
        case deleteExpiredRemovesOnlyExpiredRecordsUpToTheLimit
        case rollbackToSavepointUndoesOnlyThatRequest
        case rollbackUndoesTheWholeTransaction
        case committedDataSurvivesReopening
        case uncommittedDataDoesNotSurviveReopening
        case pingAnswers
        case pagesListEveryRecordOnceInIdOrder
        case listingsArePagesOfRecordsWithoutTheirValues
        case aForcedDurableCommitChangesNoRecord
        case intentsAreStoredAsIntentsAndExpireLikeAnyRecord
        case bucketPlacesAreTakenUpToTheLimitAndGivenBackOnDelete
        case metadataAndExpiryAreStoredAndChanged
        case recordsAreCountedAndPagedByKeyVersion
        case aResealAppliesOnlyToTheRowAsItWasRead
        case theKeyRingIsReplacedOnlyFromWhatWasRead
        case theKeyAuditTrailKeepsLinesInOrder
        case aReadingTransactionSeesWhatIsCommitted
        case newRecordsAreCommittedAndFoundOnesReadBack
        case aNewRecordsBatchSkipsOnlyTheWritesThatCannotBeMade
        case severalAliasesAreReadAtOnce
        case filesAreStoredInChunksAndFinishedIntoARecord
        case unfinishedUploadsAreSweptAndUncommittedChunksLost
        case uploadsAgeByTheirLastChunkAndDropAtOnce
        case aKeptFileMovesToItsRecordAndOutlivesTheFirst
        case auditEventsAreReadNewestFirstByEveryFilter
        case auditChainsAreReadInPlaceOrderAndTrimmedByTime
        case jobsAreTakenByOneHolderAdvancedOnlyByItAndExpire
        case groupsAreStoredWithTheirMembersAndGoWithTheirRecords
        case groupsAreCountedByKeyVersionAndResealedAsRead

        package var testDescription: String { rawValue }
    }

    /// Makes a store. Called more than once by the durability cases.
    let makeStore: () throws -> any AliasStore
    /// Whether a second store from `makeStore` opens the same data (a durable backend).
    let reopensSameData: Bool

    package init(makeStore: @escaping () throws -> any AliasStore, reopensSameData: Bool = true) {
        self.makeStore = makeStore
        self.reopensSameData = reopensSameData
    }

    package func run(_ c: Case) throws {
        switch c {
        case .insertThenLookUpByAliasAndFingerprint: try insertThenLookUpByAliasAndFingerprint()
        case .recordsWithoutFingerprintAreIndependent: try recordsWithoutFingerprintAreIndependent()
        case .aDuplicateAliasIsTakenAcrossRecords: try aDuplicateAliasIsTakenAcrossRecords()
        case .addAliasAppendsToTheRecord: try addAliasAppendsToTheRecord()
        case .deleteAliasRemovesTheRecordWithItsLastAlias: try deleteAliasRemovesTheRecordWithItsLastAlias()
        case .setClassifiersReplacesThem: try setClassifiersReplacesThem()
        case .deleteExpiredRemovesOnlyExpiredRecordsUpToTheLimit:
            try deleteExpiredRemovesOnlyExpiredRecordsUpToTheLimit()
        case .rollbackToSavepointUndoesOnlyThatRequest: try rollbackToSavepointUndoesOnlyThatRequest()
        case .rollbackUndoesTheWholeTransaction: try rollbackUndoesTheWholeTransaction()
        case .committedDataSurvivesReopening: try committedDataSurvivesReopening()
        case .uncommittedDataDoesNotSurviveReopening: try uncommittedDataDoesNotSurviveReopening()
        case .pingAnswers: try makeStore().ping()
        case .pagesListEveryRecordOnceInIdOrder: try pagesListEveryRecordOnceInIdOrder()
        case .listingsArePagesOfRecordsWithoutTheirValues: try listingsArePagesOfRecordsWithoutTheirValues()
        case .aForcedDurableCommitChangesNoRecord: try aForcedDurableCommitChangesNoRecord()
        case .intentsAreStoredAsIntentsAndExpireLikeAnyRecord: try intentsAreStoredAsIntentsAndExpireLikeAnyRecord()
        case .bucketPlacesAreTakenUpToTheLimitAndGivenBackOnDelete:
            try bucketPlacesAreTakenUpToTheLimitAndGivenBackOnDelete()
        case .recordsAreCountedAndPagedByKeyVersion: try recordsAreCountedAndPagedByKeyVersion()
        case .aResealAppliesOnlyToTheRowAsItWasRead: try aResealAppliesOnlyToTheRowAsItWasRead()
        case .theKeyRingIsReplacedOnlyFromWhatWasRead: try theKeyRingIsReplacedOnlyFromWhatWasRead()
        case .theKeyAuditTrailKeepsLinesInOrder: try theKeyAuditTrailKeepsLinesInOrder()
        case .metadataAndExpiryAreStoredAndChanged: try metadataAndExpiryAreStoredAndChanged()
        case .aReadingTransactionSeesWhatIsCommitted: try aReadingTransactionSeesWhatIsCommitted()
        case .newRecordsAreCommittedAndFoundOnesReadBack: try newRecordsAreCommittedAndFoundOnesReadBack()
        case .aNewRecordsBatchSkipsOnlyTheWritesThatCannotBeMade:
            try aNewRecordsBatchSkipsOnlyTheWritesThatCannotBeMade()
        case .severalAliasesAreReadAtOnce: try severalAliasesAreReadAtOnce()
        case .filesAreStoredInChunksAndFinishedIntoARecord: try filesAreStoredInChunksAndFinishedIntoARecord()
        case .unfinishedUploadsAreSweptAndUncommittedChunksLost: try unfinishedUploadsAreSweptAndUncommittedChunksLost()
        case .uploadsAgeByTheirLastChunkAndDropAtOnce: try uploadsAgeByTheirLastChunkAndDropAtOnce()
        case .aKeptFileMovesToItsRecordAndOutlivesTheFirst: try aKeptFileMovesToItsRecordAndOutlivesTheFirst()
        case .auditEventsAreReadNewestFirstByEveryFilter: try auditEventsAreReadNewestFirstByEveryFilter()
        case .auditChainsAreReadInPlaceOrderAndTrimmedByTime: try auditChainsAreReadInPlaceOrderAndTrimmedByTime()
        case .groupsAreStoredWithTheirMembersAndGoWithTheirRecords:
            try groupsAreStoredWithTheirMembersAndGoWithTheirRecords()
        case .groupsAreCountedByKeyVersionAndResealedAsRead: try groupsAreCountedByKeyVersionAndResealedAsRead()
        case .jobsAreTakenByOneHolderAdvancedOnlyByItAndExpire:
            // One case: jobs are taken from the whole table, so two cases at once on a shared
            // database would take each other's.
            try jobsAreTakenByOneHolderAndAdvancedOnlyByIt()
            try jobsAreListedNewestFirstAndExpireWithTheirChunks()
            try jobChunksAreDeletedASliceAtATime()
            try exportsAreApprovedOnceAndRewrittenInPlace()
            try newRecordsAreInsertedInTheTransactionUnderWay()
            try aTokensHeldInputIsCountedAcrossItsImports()
        }
    }
}
