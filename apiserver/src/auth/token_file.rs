//! Static bearer tokens, in kube-apiserver's `--token-auth-file` format: one
//! `token,user,uid[,"group1,group2"]` line per token.

use std::collections::BTreeMap;

use super::user::User;

/// A line of a token file that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("token file line {line}: {problem}")]
pub struct TokenFileError {
    /// The line number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub problem: String,
}

/// The users of a token file's text, by token; blank lines and `#` comments are skipped.
pub fn parse_token_file(text: &str) -> Result<BTreeMap<String, User>, TokenFileError> {
    let mut tokens = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let error = |problem: &str| TokenFileError {
            line: index + 1,
            problem: problem.to_string(),
        };
        let mut fields = line.splitn(4, ',');
        let token = fields.next().unwrap_or_default().trim();
        let username = fields.next().unwrap_or_default().trim();
        let uid = fields.next().map(str::trim);
        if token.is_empty() || username.is_empty() || uid.is_none() {
            return Err(error(
                "expected token,user,uid[,\"group1,group2\"] with a token and a user",
            ));
        }
        let groups = fields
            .next()
            .map(|g| g.trim().trim_matches('"'))
            .unwrap_or_default();
        let mut groups: Vec<String> = groups
            .split(',')
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .map(str::to_string)
            .collect();
        groups.push("system:authenticated".into());
        let user = User {
            username: username.to_string(),
            uid: uid.unwrap_or_default().to_string(),
            groups,
        };
        if tokens.insert(token.to_string(), user).is_some() {
            return Err(error("the token is given twice"));
        }
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_users_and_groups_and_names_a_bad_line() {
        let tokens = parse_token_file("# admins\nt1,alice,u1,\"dev,ops\"\n\nt2,bob,u2\n").unwrap();
        assert_eq!(tokens["t1"].username, "alice");
        assert_eq!(
            tokens["t1"].groups,
            ["dev", "ops", "system:authenticated"].map(String::from)
        );
        assert_eq!(
            tokens["t2"].groups,
            ["system:authenticated"].map(String::from)
        );
        let err = parse_token_file("t1,alice,u1\nbroken\n").unwrap_err();
        assert_eq!(err.line, 2);
    }
}
